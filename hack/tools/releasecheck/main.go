// Command releasecheck checks a release directory that `make release`
// (hack/dist/release.sh) wrote, so that what is published is what the
// manifests and sums say:
//   - every line of SHA256SUMS matches its file, and every file is listed;
//   - the krew manifest (napwake.yaml) has one entry per platform (linux and
//     darwin, amd64 and arm64) with the right os/arch selector, bin
//     kubectl-napwake, and the uri and sha256 of an archive that is present;
//   - each plugin archive holds kubectl-napwake, built for its os/arch (ELF or
//     Mach-O header), and LICENSE;
//   - the chart package's Chart.yaml has the release's version and appVersion;
//   - each image's digest in image-digests.txt is its OCI layout's index
//     manifest digest, and every blob in the layout hashes to its name;
//   - RELEASE-NOTES.md is the CHANGELOG entry of the version.
//
// Usage (`make release-check` runs it after `make release`):
//
//	go run ./releasecheck [-version v0.1.0] _out/release/v0.1.0
//
// The version defaults to the directory's name. Every problem is printed,
// each naming its file and what differs; the exit status is 1 if there is any.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// The plugin's platforms, and the components that ship an image.
var (
	platforms  = [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}
	components = []string{"operator", "doorman", "forwarder"}
)

const (
	sumsFile     = "SHA256SUMS"
	krewFile     = "napwake.yaml"
	digestsFile  = "image-digests.txt"
	notesFile    = "RELEASE-NOTES.md"
	pluginBinary = "kubectl-napwake"
)

func main() {
	version := flag.String("version", "", "the release's version, such as v0.1.0 (default: the directory's name)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: releasecheck [-version vX.Y.Z] RELEASE_DIR")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	v := *version
	if v == "" {
		v = filepath.Base(filepath.Clean(dir))
	}
	problems := check(dir, v)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "releasecheck:", p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "releasecheck: %s: %d problem(s)\n", dir, len(problems))
		os.Exit(1)
	}
	fmt.Printf("releasecheck: %s: %s checked: sums, krew manifest, %d plugin archives, chart, %d images, notes\n",
		dir, v, len(platforms), len(components))
}

// check returns every problem found in the release directory dir.
func check(dir, version string) []error {
	if !strings.HasPrefix(version, "v") {
		return []error{fmt.Errorf("version %q: want a leading v, such as v0.1.0", version)}
	}
	var errs []error
	for _, f := range []func(string, string) []error{checkSums, checkKrew, checkArchives, checkChart, checkImages, checkNotes} {
		errs = append(errs, f(dir, version)...)
	}
	return errs
}

func archiveName(version, goos, arch string) string {
	return fmt.Sprintf("kubectl-napwake_%s_%s_%s.tar.gz", version, goos, arch)
}

func fileSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkSums: every SHA256SUMS line matches its file, every file has a line.
func checkSums(dir, _ string) []error {
	data, err := os.ReadFile(filepath.Join(dir, sumsFile))
	if err != nil {
		return []error{fmt.Errorf("%s: %w", sumsFile, err)}
	}
	var errs []error
	listed := map[string]bool{}
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimPrefix(name, " "), "*")
		if !ok || len(sum) != 64 || name == "" || strings.Contains(name, "/") {
			errs = append(errs, fmt.Errorf("%s line %d: %q is not \"<sha256>  <file>\"", sumsFile, i+1, line))
			continue
		}
		listed[name] = true
		got, err := fileSum(filepath.Join(dir, name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s line %d names %s: %w", sumsFile, i+1, name, err))
			continue
		}
		if got != sum {
			errs = append(errs, fmt.Errorf("%s: sha256 is %s but %s says %s", name, got, sumsFile, sum))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return append(errs, err)
	}
	for _, e := range entries {
		if e.Name() != sumsFile && !listed[e.Name()] {
			errs = append(errs, fmt.Errorf("%s: not listed in %s", e.Name(), sumsFile))
		}
	}
	return errs
}

type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version   string `json:"version"`
		Platforms []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// checkKrew: one entry per platform, each naming its archive with its sum.
func checkKrew(dir, version string) []error {
	data, err := os.ReadFile(filepath.Join(dir, krewFile))
	if err != nil {
		return []error{fmt.Errorf("%s (krew manifest): %w", krewFile, err)}
	}
	var p krewPlugin
	if err := yaml.Unmarshal(data, &p); err != nil {
		return []error{fmt.Errorf("%s (krew manifest): %w", krewFile, err)}
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(krewFile+": "+format, a...)) }
	if p.Kind != "Plugin" || p.Metadata.Name != "napwake" {
		bad("kind %q, name %q; want a Plugin named napwake", p.Kind, p.Metadata.Name)
	}
	if p.Spec.Version != version {
		bad("spec.version is %q, want %q", p.Spec.Version, version)
	}
	seen := map[[2]string]bool{}
	for i, e := range p.Spec.Platforms {
		goos, arch := e.Selector.MatchLabels["os"], e.Selector.MatchLabels["arch"]
		at := fmt.Sprintf("platforms[%d] (os=%s arch=%s)", i, goos, arch)
		if len(e.Selector.MatchLabels) != 2 || !known(goos, arch) {
			bad("%s: selector %v: want exactly os and arch of %v", at, e.Selector.MatchLabels, platforms)
			continue
		}
		if seen[[2]string{goos, arch}] {
			bad("%s: a second entry for that platform", at)
		}
		seen[[2]string{goos, arch}] = true
		want := archiveName(version, goos, arch)
		u, err := url.Parse(e.URI)
		base := ""
		if err == nil {
			base = path.Base(u.Path)
		}
		if base != want {
			bad("%s: uri %s names %q, want the archive %s", at, e.URI, base, want)
		}
		if e.Bin != pluginBinary {
			bad("%s: bin is %q, want %q", at, e.Bin, pluginBinary)
		}
		sum, err := fileSum(filepath.Join(dir, want))
		switch {
		case errors.Is(err, os.ErrNotExist):
			bad("%s: its archive %s is missing from the release", at, want)
		case err != nil:
			bad("%s: %v", at, err)
		case sum != e.SHA256:
			bad("%s: sha256 is %s but %s has sha256 %s", at, e.SHA256, want, sum)
		}
	}
	for _, pl := range platforms {
		if !seen[pl] {
			bad("no entry for os=%s arch=%s", pl[0], pl[1])
		}
	}
	return errs
}

func known(goos, arch string) bool {
	for _, p := range platforms {
		if p == [2]string{goos, arch} {
			return true
		}
	}
	return false
}

// readTar calls fn for every regular file of a tar (gzipped when gz).
func readTar(p string, gz bool, fn func(h *tar.Header, r io.Reader) error) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if gz {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if err := fn(h, tr); err != nil {
			return err
		}
	}
}

// checkArchives: each archive holds the plugin built for its platform, and LICENSE.
func checkArchives(dir, version string) []error {
	var errs []error
	for _, pl := range platforms {
		name := archiveName(version, pl[0], pl[1])
		var bin []byte
		var mode int64
		license := false
		err := readTar(filepath.Join(dir, name), true, func(h *tar.Header, r io.Reader) error {
			switch strings.TrimPrefix(h.Name, "./") {
			case pluginBinary:
				mode = h.Mode
				var err error
				bin, err = io.ReadAll(r)
				return err
			case "LICENSE":
				license = h.Size > 0
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if !license {
			errs = append(errs, fmt.Errorf("%s: no LICENSE in the archive (krew-index refuses it)", name))
		}
		if bin == nil {
			errs = append(errs, fmt.Errorf("%s: no %s in the archive", name, pluginBinary))
			continue
		}
		if mode&0o111 == 0 {
			errs = append(errs, fmt.Errorf("%s: %s is not executable (mode %o)", name, pluginBinary, mode))
		}
		if got := binaryPlatform(bin); got != pl[0]+"/"+pl[1] {
			errs = append(errs, fmt.Errorf("%s: %s is built for %s, want %s/%s", name, pluginBinary, got, pl[0], pl[1]))
		}
	}
	return errs
}

// binaryPlatform reads an executable's header: "linux/arm64", "darwin/amd64", ...
func binaryPlatform(b []byte) string {
	if f, err := elf.NewFile(bytes.NewReader(b)); err == nil {
		arches := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}
		if a, ok := arches[f.Machine]; ok && f.Class == elf.ELFCLASS64 {
			return "linux/" + a
		}
		return fmt.Sprintf("ELF %v %v", f.Class, f.Machine)
	}
	if f, err := macho.NewFile(bytes.NewReader(b)); err == nil {
		arches := map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}
		if a, ok := arches[f.Cpu]; ok {
			return "darwin/" + a
		}
		return fmt.Sprintf("Mach-O %v", f.Cpu)
	}
	return "neither ELF nor Mach-O"
}

// checkChart: napwake-<version without v>.tgz, whose Chart.yaml says the version.
func checkChart(dir, version string) []error {
	name := "napwake-" + strings.TrimPrefix(version, "v") + ".tgz"
	var meta struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	found := false
	err := readTar(filepath.Join(dir, name), true, func(h *tar.Header, r io.Reader) error {
		if h.Name != "napwake/Chart.yaml" {
			return nil
		}
		found = true
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		return yaml.Unmarshal(data, &meta)
	})
	if err != nil {
		return []error{fmt.Errorf("%s (chart package): %w", name, err)}
	}
	if !found {
		return []error{fmt.Errorf("%s (chart package): no napwake/Chart.yaml", name)}
	}
	var errs []error
	if meta.Name != "napwake" {
		errs = append(errs, fmt.Errorf("%s: Chart.yaml name is %q, want napwake", name, meta.Name))
	}
	if meta.Version != strings.TrimPrefix(version, "v") {
		errs = append(errs, fmt.Errorf("%s: Chart.yaml version is %q, want %q", name, meta.Version, strings.TrimPrefix(version, "v")))
	}
	if meta.AppVersion != version {
		errs = append(errs, fmt.Errorf("%s: Chart.yaml appVersion is %q, want %q", name, meta.AppVersion, version))
	}
	return errs
}

type ociIndex struct {
	SchemaVersion int `json:"schemaVersion"`
	Manifests     []struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
	} `json:"manifests"`
}

// checkImages: image-digests.txt names each component's image once, with
// the digest its OCI layout's index.json gives.
func checkImages(dir, version string) []error {
	data, err := os.ReadFile(filepath.Join(dir, digestsFile))
	if err != nil {
		return []error{fmt.Errorf("%s: %w", digestsFile, err)}
	}
	var errs []error
	digests := map[string][2]string{} // component -> reference, digest
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || !strings.HasPrefix(f[1], "sha256:") {
			errs = append(errs, fmt.Errorf("%s line %d: %q is not \"<image reference> sha256:<digest>\"", digestsFile, n, sc.Text()))
			continue
		}
		repo, tag, _ := strings.Cut(path.Base(f[0]), ":")
		c := strings.TrimPrefix(repo, "napwake-")
		if tag != version || c == repo {
			errs = append(errs, fmt.Errorf("%s line %d: %s is not napwake-<component>:%s", digestsFile, n, f[0], version))
			continue
		}
		if _, dup := digests[c]; dup {
			errs = append(errs, fmt.Errorf("%s line %d: a second line for %s", digestsFile, n, repo))
		}
		digests[c] = [2]string{f[0], f[1]}
	}
	for _, c := range components {
		d, ok := digests[c]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no line for napwake-%s", digestsFile, c))
			continue
		}
		delete(digests, c)
		errs = append(errs, checkLayout(dir, fmt.Sprintf("napwake-%s_%s.oci.tar", c, version), d[0], d[1], version)...)
	}
	for c := range digests {
		errs = append(errs, fmt.Errorf("%s: napwake-%s is not one of the components %v", digestsFile, c, components))
	}
	return errs
}

// checkLayout reads an OCI layout tar: its index must list exactly the image
// ref with digest, and every blob must hash to its name.
func checkLayout(dir, name, ref, digest, version string) []error {
	var errs []error
	var index []byte
	layoutFile := false
	blobs := map[string]bool{}
	err := readTar(filepath.Join(dir, name), false, func(h *tar.Header, r io.Reader) error {
		p := strings.TrimPrefix(h.Name, "./")
		switch {
		case p == "index.json":
			var err error
			index, err = io.ReadAll(r)
			return err
		case p == "oci-layout":
			layoutFile = true
		case strings.HasPrefix(p, "blobs/sha256/"):
			want := strings.TrimPrefix(p, "blobs/sha256/")
			hash := sha256.New()
			if _, err := io.Copy(hash, r); err != nil {
				return err
			}
			if got := hex.EncodeToString(hash.Sum(nil)); got != want {
				errs = append(errs, fmt.Errorf("%s: blob %s has sha256 %s", name, p, got))
			}
			blobs["sha256:"+want] = true
		}
		return nil
	})
	if err != nil {
		return append(errs, fmt.Errorf("%s (OCI layout of %s): %w", name, ref, err))
	}
	if !layoutFile {
		errs = append(errs, fmt.Errorf("%s: no oci-layout file: not an OCI image layout", name))
	}
	var idx ociIndex
	if err := json.Unmarshal(index, &idx); err != nil || idx.SchemaVersion != 2 {
		return append(errs, fmt.Errorf("%s: index.json is missing or not an OCI index (schemaVersion 2)", name))
	}
	if len(idx.Manifests) != 1 {
		return append(errs, fmt.Errorf("%s: index.json lists %d manifests, want 1", name, len(idx.Manifests)))
	}
	m := idx.Manifests[0]
	if m.Digest != digest {
		errs = append(errs, fmt.Errorf("%s: index manifest digest is %s but %s says %s for %s", name, m.Digest, digestsFile, digest, ref))
	}
	if !blobs[m.Digest] {
		errs = append(errs, fmt.Errorf("%s: the manifest %s is not among its blobs", name, m.Digest))
	}
	if got := m.Annotations["io.containerd.image.name"]; got != ref {
		errs = append(errs, fmt.Errorf("%s: index names the image %q, %s says %q", name, got, digestsFile, ref))
	}
	if got := m.Annotations["org.opencontainers.image.ref.name"]; got != version {
		errs = append(errs, fmt.Errorf("%s: index tags the image %q, want %q", name, got, version))
	}
	return errs
}

// checkNotes: RELEASE-NOTES.md starts with the CHANGELOG heading of the version.
func checkNotes(dir, version string) []error {
	data, err := os.ReadFile(filepath.Join(dir, notesFile))
	if err != nil {
		return []error{fmt.Errorf("%s: %w", notesFile, err)}
	}
	first, rest, _ := strings.Cut(string(data), "\n")
	if !strings.HasPrefix(first, "## ["+version+"]") && !strings.HasPrefix(first, "## ["+strings.TrimPrefix(version, "v")+"]") {
		return []error{fmt.Errorf("%s: starts with %q, want the CHANGELOG.md heading \"## [%s] - <date>\"", notesFile, first, version)}
	}
	if strings.TrimSpace(rest) == "" {
		return []error{fmt.Errorf("%s: the entry for %s says nothing", notesFile, version)}
	}
	return nil
}
