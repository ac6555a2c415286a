package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"napwake.dev/shared/testenv"
)

// TestKustomizeBaseBuildsInstallYAML: `kubectl kustomize deploy/kustomize`
// gives exactly the objects of deploy/install.yaml, and install.yaml is the
// chart's defaults (hack/chart/render.sh --verify checks the bytes).
func TestKustomizeBaseBuildsInstallYAML(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "deploy", "kustomize")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/kustomize: %v", err)
	}
	built, err := decode(string(out))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	install, err := decode(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != len(install) {
		t.Fatalf("kustomize builds %d objects (%s), install.yaml has %d (%s)", len(built), built, len(install), install)
	}
	chart := render(t, noHooks) // as hack/chart/render.sh: the uninstall hook is no object of install.yaml
	for _, u := range install {
		b := built.find(u.GetKind(), u.GetName())
		if b == nil || !reflect.DeepEqual(b.Object, u.Object) {
			t.Errorf("%s/%s differs between kustomize and install.yaml", u.GetKind(), u.GetName())
		}
		if u.GetKind() == "Namespace" {
			if u.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Errorf("install.yaml's namespace does not enforce restricted: %v", u.GetLabels())
			}
			continue
		}
		if c := chart.find(u.GetKind(), u.GetName()); c == nil || !reflect.DeepEqual(c.Object, u.Object) {
			t.Errorf("%s/%s in install.yaml is not what the chart renders by default: run hack/chart/render.sh", u.GetKind(), u.GetName())
		}
	}
	if len(install) != len(chart)+1 {
		t.Errorf("install.yaml has %d objects, the chart renders %d (+ the namespace)", len(install), len(chart))
	}
}
