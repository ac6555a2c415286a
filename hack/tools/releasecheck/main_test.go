package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const testVersion = "v1.2.3"

// elfHeader is the 64-byte header of a little-endian ELF64 executable.
func elfHeader(m elf.Machine) []byte {
	var h elf.Header64
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	h.Type = uint16(elf.ET_EXEC)
	h.Machine = uint16(m)
	h.Version = uint32(elf.EV_CURRENT)
	h.Ehsize = 64
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, h)
	return b.Bytes()
}

// machoHeader is the header of a 64-bit Mach-O executable with no load commands.
func machoHeader(c macho.Cpu) []byte {
	h := macho.FileHeader{Magic: macho.Magic64, Cpu: c, Type: macho.TypeExec}
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, h)
	_ = binary.Write(&b, binary.LittleEndian, uint32(0)) // reserved
	return b.Bytes()
}

func binaryFor(goos, arch string) []byte {
	switch goos + "/" + arch {
	case "linux/amd64":
		return elfHeader(elf.EM_X86_64)
	case "linux/arm64":
		return elfHeader(elf.EM_AARCH64)
	case "darwin/amd64":
		return machoHeader(macho.CpuAmd64)
	default:
		return machoHeader(macho.CpuArm64)
	}
}

type entry struct {
	name string
	mode int64
	data []byte
}

func tarOf(t *testing.T, gz bool, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	var w = &b
	var zw *gzip.Writer
	var tw *tar.Writer
	if gz {
		zw = gzip.NewWriter(w)
		tw = tar.NewWriter(zw)
	} else {
		tw = tar.NewWriter(w)
	}
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func write(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func pluginArchive(t *testing.T, goos, arch string) []byte {
	t.Helper()
	return tarOf(t, true,
		entry{"LICENSE", 0o644, []byte("Apache License\n")},
		entry{pluginBinary, 0o755, binaryFor(goos, arch)})
}

func krewManifest(t *testing.T, dir string) []byte {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\nmetadata:\n  name: napwake\nspec:\n  version: %s\n  platforms:\n", testVersion)
	for _, p := range platforms {
		a := archiveName(testVersion, p[0], p[1])
		data, err := os.ReadFile(filepath.Join(dir, a))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  - selector:\n      matchLabels:\n        os: %s\n        arch: %s\n    uri: https://example.com/download/kubectl-napwake%%2F%s/%s\n    sha256: %s\n    bin: kubectl-napwake\n",
			p[0], p[1], testVersion, a, sum(data))
	}
	return []byte(b.String())
}

// ociLayout is an OCI layout tar of one "image" whose manifest is manifest.
func ociLayout(t *testing.T, ref, manifest string) (tarball []byte, digest string) {
	t.Helper()
	digest = "sha256:" + sum([]byte(manifest))
	index := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":%d,"digest":%q,"annotations":{"io.containerd.image.name":%q,"org.opencontainers.image.ref.name":%q}}]}`,
		len(manifest), digest, ref, testVersion)
	return tarOf(t, false,
		entry{"blobs/sha256/" + strings.TrimPrefix(digest, "sha256:"), 0o644, []byte(manifest)},
		entry{"index.json", 0o644, []byte(index)},
		entry{"oci-layout", 0o644, []byte(`{"imageLayoutVersion":"1.0.0"}`)}), digest
}

// resum writes SHA256SUMS over every other file, as release.sh does.
func resum(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != sumsFile {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s  %s\n", sum(data), n)
	}
	write(t, dir, sumsFile, []byte(b.String()))
}

// release writes a good release of testVersion into a new directory.
func release(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range platforms {
		write(t, dir, archiveName(testVersion, p[0], p[1]), pluginArchive(t, p[0], p[1]))
	}
	write(t, dir, krewFile, krewManifest(t, dir))
	write(t, dir, "napwake-1.2.3.tgz", tarOf(t, true,
		entry{"napwake/Chart.yaml", 0o644, []byte("apiVersion: v2\nname: napwake\nversion: 1.2.3\nappVersion: \"v1.2.3\"\n")},
		entry{"napwake/values.yaml", 0o644, []byte("{}\n")}))
	var digests strings.Builder
	for _, c := range components {
		ref := "napwake.local/napwake-" + c + ":" + testVersion
		layout, d := ociLayout(t, ref, `{"schemaVersion":2,"component":"`+c+`"}`)
		write(t, dir, "napwake-"+c+"_"+testVersion+".oci.tar", layout)
		fmt.Fprintf(&digests, "%s %s\n", ref, d)
	}
	write(t, dir, digestsFile, []byte(digests.String()))
	write(t, dir, notesFile, []byte("## [v1.2.3] - 2026-12-07\n\n### Added\n\n- things\n"))
	resum(t, dir)
	return dir
}

func edit(t *testing.T, dir, name, old, new string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s has no %q", name, old)
	}
	write(t, dir, name, bytes.Replace(data, []byte(old), []byte(new), 1))
}

func TestCheck(t *testing.T) {
	linuxArm := archiveName(testVersion, "linux", "arm64")
	darwinArm := archiveName(testVersion, "darwin", "arm64")
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string)
		want   []string // each must appear in one problem; none for a good release
	}{
		{name: "a good release", tamper: func(t *testing.T, _ string) { t.Helper() }},
		{
			name: "a file changed after its sum was taken",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				write(t, dir, notesFile, []byte("## [v1.2.3] - 2026-12-07\n\n- something else\n"))
			},
			want: []string{notesFile + ": sha256 is", "but SHA256SUMS says"},
		},
		{
			name: "a tampered sum in SHA256SUMS",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				data, err := os.ReadFile(filepath.Join(dir, linuxArm))
				if err != nil {
					t.Fatal(err)
				}
				edit(t, dir, sumsFile, sum(data), strings.Repeat("0", 64))
			},
			want: []string{linuxArm + ": sha256 is", "but SHA256SUMS says " + strings.Repeat("0", 64)},
		},
		{
			name: "a file SHA256SUMS does not list",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				write(t, dir, "extra.txt", []byte("x"))
			},
			want: []string{"extra.txt: not listed in SHA256SUMS"},
		},
		{
			name: "a wrong sha256 in the krew manifest",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				data, err := os.ReadFile(filepath.Join(dir, darwinArm))
				if err != nil {
					t.Fatal(err)
				}
				edit(t, dir, krewFile, sum(data), strings.Repeat("a", 64))
				resum(t, dir)
			},
			want: []string{krewFile + ": platforms[3] (os=darwin arch=arm64): sha256 is " + strings.Repeat("a", 64) + " but " + darwinArm + " has sha256"},
		},
		{
			name: "a missing archive",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				if err := os.Remove(filepath.Join(dir, darwinArm)); err != nil {
					t.Fatal(err)
				}
				resum(t, dir)
			},
			want: []string{
				"its archive " + darwinArm + " is missing from the release",
				darwinArm + ": open",
			},
		},
		{
			name: "a krew selector naming the wrong arch",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				edit(t, dir, krewFile, "os: linux\n        arch: arm64", "os: linux\n        arch: amd64")
				resum(t, dir)
			},
			want: []string{"platforms[1] (os=linux arch=amd64): a second entry", "platforms[1] (os=linux arch=amd64): uri", "no entry for os=linux arch=arm64"},
		},
		{
			name: "a krew entry with the wrong bin",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				edit(t, dir, krewFile, "bin: kubectl-napwake", "bin: napwake")
				resum(t, dir)
			},
			want: []string{`platforms[0] (os=linux arch=amd64): bin is "napwake"`},
		},
		{
			name: "an archive with the binary of another platform, and no LICENSE",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				write(t, dir, linuxArm, tarOf(t, true, entry{pluginBinary, 0o755, binaryFor("linux", "amd64")}))
				write(t, dir, krewFile, krewManifest(t, dir))
				resum(t, dir)
			},
			want: []string{linuxArm + ": kubectl-napwake is built for linux/amd64, want linux/arm64", linuxArm + ": no LICENSE"},
		},
		{
			name: "a chart whose appVersion is not the release's",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				write(t, dir, "napwake-1.2.3.tgz", tarOf(t, true,
					entry{"napwake/Chart.yaml", 0o644, []byte("apiVersion: v2\nname: napwake\nversion: 1.2.3\nappVersion: v1.2.2\n")}))
				resum(t, dir)
			},
			want: []string{`napwake-1.2.3.tgz: Chart.yaml appVersion is "v1.2.2", want "v1.2.3"`},
		},
		{
			name: "an image digest that is not its layout's",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				_, other := ociLayout(t, "x", "another manifest")
				data, err := os.ReadFile(filepath.Join(dir, digestsFile))
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(string(data), "\n")
				old := strings.Fields(lines[1])[1]
				edit(t, dir, digestsFile, old, other)
				resum(t, dir)
			},
			want: []string{"napwake-doorman_v1.2.3.oci.tar: index manifest digest is"},
		},
		{
			name: "a missing image",
			tamper: func(t *testing.T, dir string) {
				t.Helper()
				if err := os.Remove(filepath.Join(dir, "napwake-forwarder_v1.2.3.oci.tar")); err != nil {
					t.Fatal(err)
				}
				resum(t, dir)
			},
			want: []string{"napwake-forwarder_v1.2.3.oci.tar (OCI layout of napwake.local/napwake-forwarder:v1.2.3)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := release(t)
			tt.tamper(t, dir)
			problems := check(dir, testVersion)
			var msgs []string
			for _, p := range problems {
				msgs = append(msgs, p.Error())
			}
			all := strings.Join(msgs, "\n")
			if len(tt.want) == 0 && len(problems) > 0 {
				t.Fatalf("a good release: want no problems, got:\n%s", all)
			}
			if len(tt.want) > 0 && len(problems) == 0 {
				t.Fatal("want problems, got none")
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("want a problem containing %q, got:\n%s", w, all)
				}
			}
		})
	}
}
