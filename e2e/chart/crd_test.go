package chart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"napwake.dev/shared/testenv"
)

const (
	crdName    = "managedworkloads.napwake.dev"
	crdFile    = "napwake.dev_managedworkloads.yaml"
	keepPolicy = "helm.sh/resource-policy"
	// oldField is the spec field the upgrade test's "old" CRD lacks: a
	// field a newer chart adds, which an API server pruned before.
	oldField = "idleAfter"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// generatedCRD returns the CRD controller-gen wrote to config/crd.
func generatedCRD(t testing.TB) *unstructured.Unstructured {
	t.Helper()
	dir, err := testenv.CRDDir()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, crdFile))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(string(data))
	if err != nil {
		t.Fatal(err)
	}
	return objs.get(t, "CustomResourceDefinition", crdName)
}

// TestTheCRDIsATemplateOfTheGeneratedOne: the chart renders the CRD that
// controller-gen wrote (config/crd), spec for spec, with the chart's labels
// and the keep policy; crds.keep=false drops the policy, crds.enabled=false
// the CRD; and values without crds (what `helm upgrade --reuse-values`
// gives from a chart before them) still render it, kept.
func TestTheCRDIsATemplateOfTheGeneratedOne(t *testing.T) {
	want := generatedCRD(t)
	t.Run("by default", func(t *testing.T) {
		crd := render(t, "--set", "commonLabels.team=platform").get(t, "CustomResourceDefinition", crdName)
		if !reflect.DeepEqual(crd.Object["spec"], want.Object["spec"]) {
			t.Error("the chart's CRD spec differs from config/crd's: run make generate")
		}
		if got := crd.GetAnnotations()[keepPolicy]; got != "keep" {
			t.Errorf("annotation %s %q, want keep: helm uninstall would delete every ManagedWorkload", keepPolicy, got)
		}
		for k, v := range map[string]string{"app.kubernetes.io/instance": release, "app.kubernetes.io/part-of": "napwake", "team": "platform"} {
			if got := crd.GetLabels()[k]; got != v {
				t.Errorf("label %s %q, want %q", k, got, v)
			}
		}
	})
	t.Run("crds.keep=false", func(t *testing.T) {
		crd := render(t, "--set", "crds.keep=false").get(t, "CustomResourceDefinition", crdName)
		if got, ok := crd.GetAnnotations()[keepPolicy]; ok {
			t.Errorf("annotation %s %q, want none", keepPolicy, got)
		}
	})
	t.Run("crds.enabled=false", func(t *testing.T) {
		if got := render(t, "--set", "crds.enabled=false").ofKind("CustomResourceDefinition"); len(got) != 0 {
			t.Errorf("rendered %s, want no CRD", got)
		}
	})
	t.Run("values without crds, as --reuse-values from an older chart", func(t *testing.T) {
		crd := render(t, "--set", "crds=null").get(t, "CustomResourceDefinition", crdName)
		if got := crd.GetAnnotations()[keepPolicy]; got != "keep" {
			t.Errorf("annotation %s %q, want keep", keepPolicy, got)
		}
	})
}

// removeCRD deletes the CRD, and with it every ManagedWorkload, and waits
// until it is gone: a test that installs it starts from a cluster without.
func removeCRD(t testing.TB) {
	t.Helper()
	crds := clientsAs(t, "").dyn.Resource(crdGVR)
	if err := crds.Delete(context.Background(), crdName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, pollTimeout, testenv.EventuallyInterval, "the CRD gone", func() error {
		return gone(crds.Get(context.Background(), crdName, metav1.GetOptions{}))
	})
}

// gone turns a Get into nil when it found nothing, for a wait on a deletion.
func gone(_ *unstructured.Unstructured, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	return errors.New("still there")
}

// crdServed waits until ManagedWorkloads are served, and check (when not
// nil) accepts the CRD.
func crdServed(t testing.TB, check func(*unstructured.Unstructured) error) {
	t.Helper()
	c := clientsAs(t, "")
	testenv.EventuallyWithin(t, pollTimeout, testenv.EventuallyInterval, "ManagedWorkloads served", func() error {
		crd, err := c.dyn.Resource(crdGVR).Get(context.Background(), crdName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		established := false
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			established = established || (m["type"] == "Established" && m["status"] == "True")
		}
		if !established {
			return fmt.Errorf("not Established: %v", conds)
		}
		if check != nil {
			return check(crd)
		}
		return nil
	})
}

// docBlock returns the shell block that follows the marker
// `<!-- e2e: name ... -->` in a page of docs/, exactly as a user copies it.
func docBlock(t testing.TB, page, name string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", page))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "<!-- e2e: "+name)
	if !ok {
		t.Fatalf("docs/%s has no <!-- e2e: %s --> marker", page, name)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatalf("no ```sh block after docs/%s's <!-- e2e: %s --> marker", page, name)
	}
	return block
}

// runAsUser runs a block from the docs with bash in the repository's root,
// with helm (bin/helm) and kubectl (the envtest binaries') on PATH and the
// envtest admin's kubeconfig, as a user at a terminal would.
func runAsUser(t testing.TB, kubeconfig, block string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(root, "bin")+":"+assets+":"+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig,
		"HELM_CACHE_HOME="+helmHome+"/cache", "HELM_CONFIG_HOME="+helmHome+"/config", "HELM_DATA_HOME="+helmHome+"/data")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the docs' commands failed: %v\n%s\n%s", err, block, out)
	}
}

// oldChart writes the chart as it was before its CRD became a template: the
// CRD in crds/ (which Helm creates once, without its own labels, and never
// upgrades), without oldField, and no crds values.
func oldChart(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "napwake")
	if err := os.CopyFS(dir, os.DirFS(chartDir(t))); err != nil {
		t.Fatal(err)
	}
	templates, err := filepath.Glob(filepath.Join(dir, "templates", "crd-*.yaml"))
	if err != nil || len(templates) == 0 {
		t.Fatalf("no CRD template in the chart (%v)", err)
	}
	for _, f := range templates {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	values, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	before, after, ok := strings.Cut(string(values), "\ncrds:\n")
	if !ok {
		t.Fatal("no crds: in values.yaml")
	}
	_, after, _ = strings.Cut(after, "\n\n")
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte(before+"\n"+after), 0o644); err != nil {
		t.Fatal(err)
	}

	crd := generatedCRD(t)
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	v0 := versions[0].(map[string]any)
	unstructured.RemoveNestedField(v0, "schema", "openAPIV3Schema", "properties", "spec", "properties", oldField)
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(crd.Object) // JSON is YAML, and Helm reads crds/*.yaml
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crds", crdFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// setOldField sets oldField on a ManagedWorkload in ns (creating it) and
// returns what the API server kept of it ("" when it pruned it). Unknown
// fields are let through to the API server's pruning (FieldValidation
// Ignore), as an older kubectl or client would send them.
func setOldField(t testing.TB, c *cluster, ns, name, value string) string {
	t.Helper()
	ctx := context.Background()
	mws := c.dyn.Resource(mwGVR).Namespace(ns)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "napwake.dev/v1alpha1", "kind": "ManagedWorkload",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"targetRef": map[string]any{"kind": "Deployment", "name": name}, oldField: value},
	}}
	got, err := mws.Create(ctx, u, metav1.CreateOptions{FieldValidation: "Ignore"})
	if apierrors.IsAlreadyExists(err) {
		patch := fmt.Sprintf(`{"spec":{%q:%q}}`, oldField, value)
		got, err = mws.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldValidation: "Ignore"})
	}
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(got.Object, "spec", oldField)
	return v
}

// TestAnInstallFromBeforeTheCRDTemplateUpgrades: a release installed when
// the CRD was in the chart's crds/ has a CRD without Helm's ownership
// metadata, which `helm upgrade` refuses to take over. After the adoption
// commands of docs/upgrade.md (run as written, with the upgrade command
// beside them), the upgrade succeeds and upgrades the CRD: a field the old
// CRD lacked, pruned before, is kept after. `helm uninstall` then keeps the
// CRD and the ManagedWorkloads (crds.keep), a new install takes the kept
// CRD up again, and with crds.keep=false an uninstall deletes it.
func TestAnInstallFromBeforeTheCRDTemplateUpgrades(t *testing.T) {
	removeCRD(t)
	restrictedNamespace(t, namespace)
	kc := kubeconfig(t)
	ctx := context.Background()
	admin := clientsAs(t, "")
	const ns = "upgrade-from-crds"
	if _, err := admin.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = runHelm("uninstall", release, "--namespace", namespace, "--kubeconfig", kc, "--ignore-not-found", noHooks)
		removeCRD(t)
	})

	if _, err := runHelm("install", release, oldChart(t), "--namespace", namespace, "--kubeconfig", kc); err != nil {
		t.Fatal(err)
	}
	crdServed(t, nil)
	if v := setOldField(t, admin, ns, "before", "2h"); v != "" {
		t.Fatalf("the old CRD kept spec.%s %q: it should not know the field", oldField, v)
	}

	_, err := runHelm("upgrade", release, chartDir(t), "--namespace", namespace, "--kubeconfig", kc, "--reset-then-reuse-values")
	if err == nil || !strings.Contains(err.Error(), "cannot be imported into the current release") {
		t.Fatalf("helm upgrade before the adoption: %v, want the refusal docs/upgrade.md explains", err)
	}

	runAsUser(t, kc, docBlock(t, "upgrade.md", "adopt-crd"))

	crdServed(t, func(crd *unstructured.Unstructured) error {
		if crd.GetAnnotations()[keepPolicy] != "keep" || crd.GetLabels()["app.kubernetes.io/part-of"] != "napwake" {
			return fmt.Errorf("the CRD lacks the chart's keep policy or labels: %v %v", crd.GetAnnotations(), crd.GetLabels())
		}
		return nil
	})
	// The API server takes up a changed schema shortly after the update.
	testenv.EventuallyWithin(t, pollTimeout, testenv.EventuallyInterval, "spec."+oldField+" kept after the upgrade", func() error {
		if v := setOldField(t, admin, ns, "after", "2h"); v != "2h" {
			return fmt.Errorf("spec.%s %q, want 2h", oldField, v)
		}
		return nil
	})
	if _, err := admin.dyn.Resource(mwGVR).Namespace(ns).Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Errorf("the ManagedWorkload from before the upgrade: %v", err)
	}

	if _, err := runHelm("uninstall", release, "--namespace", namespace, "--kubeconfig", kc, noHooks); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{}); err != nil {
		t.Fatalf("helm uninstall deleted the CRD (crds.keep is on by default): %v", err)
	}
	for _, name := range []string{"before", "after"} {
		if _, err := admin.dyn.Resource(mwGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("helm uninstall deleted the ManagedWorkload %s: %v", name, err)
		}
	}

	// Installed again, the chart takes up the CRD it kept; with keep off,
	// uninstalling deletes it and every ManagedWorkload.
	if _, err := runHelm("install", release, chartDir(t), "--namespace", namespace, "--kubeconfig", kc, "--set", "crds.keep=false"); err != nil {
		t.Fatalf("installing over the kept CRD: %v", err)
	}
	if _, err := runHelm("uninstall", release, "--namespace", namespace, "--kubeconfig", kc, noHooks); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, pollTimeout, testenv.EventuallyInterval, "the CRD deleted with crds.keep=false", func() error {
		return gone(admin.dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{}))
	})
}
