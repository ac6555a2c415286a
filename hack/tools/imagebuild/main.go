// Command imagebuild makes a minimal OCI image from one static binary, the
// way ko does, without Docker: no base image, no shell, a numeric non-root
// user, and a deterministic result (the same binary gives the same digest).
//
//	imagebuild --binary bin/doorman --image napwake.local/napwake-doorman:v0.1.0 \
//	    --entrypoint /doorman --out _out/images/napwake-doorman.tar
//	imagebuild ... --push registry.example.com/napwake   # push instead of (or as well as) --out
//	imagebuild ... --oci-layout _out/release/v0.1.0/oci  # an OCI image layout directory (make release)
//
// The tarball is a docker-archive that `ctr -n k8s.io images import` and
// `docker load` accept. The OCI layout is a fresh directory (index.json,
// oci-layout, blobs/sha256/) whose index names the one image by its tag
// (org.opencontainers.image.ref.name) and full reference
// (io.containerd.image.name). It prints the image's manifest digest on
// stdout, the same whichever outputs are asked for.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type options struct {
	binary     string
	image      string
	entrypoint string
	user       string
	out        string
	ociLayout  string
	push       string
	ports      string
	arch       string
	insecure   bool
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run() error {
	var o options
	flag.StringVar(&o.binary, "binary", "", "static binary to put in the image (required)")
	flag.StringVar(&o.image, "image", "", "full image reference with a tag, such as napwake.local/napwake-doorman:v0.1.0 (required)")
	flag.StringVar(&o.entrypoint, "entrypoint", "", "path of the binary inside the image (default /<binary's name>)")
	flag.StringVar(&o.user, "user", "65532:65532", "numeric uid:gid the image runs as")
	flag.StringVar(&o.out, "out", "", "write a docker-archive tarball here")
	flag.StringVar(&o.ociLayout, "oci-layout", "", "write an OCI image layout into this directory, which must not exist yet")
	flag.StringVar(&o.push, "push", "", "push to this registry prefix, such as registry.example.com/napwake")
	flag.StringVar(&o.ports, "ports", "", "comma-separated TCP ports to declare as exposed")
	flag.StringVar(&o.arch, "arch", "amd64", "the binary's architecture")
	flag.BoolVar(&o.insecure, "insecure", false, "push over plain HTTP (a registry on a private test network)")
	flag.Parse()
	if o.binary == "" || o.image == "" {
		return errors.New("--binary and --image are required")
	}
	if o.out == "" && o.push == "" && o.ociLayout == "" {
		return errors.New("give --out, --oci-layout, --push, or several")
	}
	if o.entrypoint == "" {
		o.entrypoint = "/" + path.Base(o.binary)
	}
	if strings.HasPrefix(o.user, "0") || strings.HasPrefix(o.user, "root") {
		return fmt.Errorf("--user %q: images run as a non-root numeric user", o.user)
	}
	img, err := build(o)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("computing digest: %w", err)
	}
	if o.out != "" {
		ref, err := name.NewTag(o.image, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("parsing --image: %w", err)
		}
		if err := tarball.WriteToFile(o.out, ref, img); err != nil {
			return fmt.Errorf("writing %s: %w", o.out, err)
		}
	}
	if o.ociLayout != "" {
		if err := writeLayout(o.ociLayout, o.image, img); err != nil {
			return err
		}
	}
	if o.push != "" {
		var nopts []name.Option
		if o.insecure {
			nopts = append(nopts, name.Insecure)
		}
		ref, err := name.NewTag(strings.TrimSuffix(o.push, "/")+"/"+path.Base(o.image), nopts...)
		if err != nil {
			return fmt.Errorf("parsing --push: %w", err)
		}
		if err := remote.Write(ref, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		fmt.Fprintf(os.Stderr, "pushed %s@%s\n", ref, digest)
	}
	fmt.Println(digest.String())
	return nil
}

// writeLayout writes img as the only image of a new OCI image layout in dir.
// It refuses an existing dir: appending to one would list older images too.
func writeLayout(dir, image string, img v1.Image) error {
	ref, err := name.NewTag(image, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("parsing --image: %w", err)
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("--oci-layout %s: already exists; give a new directory", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.Name(),
	})); err != nil {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	return nil
}

// build makes the image: one layer holding the binary (mode 0755, mtime 0),
// an OCI config naming the entrypoint and the user, nothing else.
func build(o options) (v1.Image, error) {
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, fmt.Errorf("reading binary: %w", err)
	}
	layerTar, err := tarOf(strings.TrimPrefix(o.entrypoint, "/"), bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, fmt.Errorf("appending layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = o.arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{o.entrypoint}
	cf.Config.User = o.user
	cf.Config.Env = []string{"PATH=/"}
	if o.ports != "" {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range strings.Split(o.ports, ",") {
			cf.Config.ExposedPorts[strings.TrimSpace(p)+"/tcp"] = struct{}{}
		}
	}
	return mutate.ConfigFile(img, cf)
}

func tarOf(name string, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Name:     name,
		Mode:     0o755,
		Size:     int64(len(data)),
		ModTime:  time.Unix(0, 0),
		Typeflag: tar.TypeReg,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
