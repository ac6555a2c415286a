package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"napwake.dev/shared/testenv"
)

const (
	release   = "napwake"
	namespace = "napwake-system"
)

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary returns bin/helm, building the pinned one when it is missing.
func helmBinary() (string, error) {
	helmOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			helmErr = err
			return
		}
		helmPath = filepath.Join(root, "bin", "helm")
		if _, err := os.Stat(helmPath); err == nil {
			return
		}
		cmd := exec.Command(filepath.Join(root, "hack", "helm", "build.sh"))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			helmErr = fmt.Errorf("building helm with hack/helm/build.sh: %w", err)
		}
	})
	return helmPath, helmErr
}

// chartDir returns charts/napwake.
func chartDir(t testing.TB) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", "napwake")
}

// runHelm runs helm with args and returns its standard output, or an error
// carrying its standard error.
func runHelm(args ...string) (string, error) {
	bin, err := helmBinary()
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// helm's own files go to the package's temporary home, not the user's.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+helmHome+"/cache", "HELM_CONFIG_HOME="+helmHome+"/config", "HELM_DATA_HOME="+helmHome+"/data")
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// templateArgs are the arguments of `helm template` for the release under test.
func templateArgs(t testing.TB, extra ...string) []string {
	t.Helper()
	return append([]string{"template", release, chartDir(t), "--namespace", namespace}, extra...)
}

// render runs `helm template` with extra arguments (--set, -f, ...) and decodes
// what it prints.
func render(t testing.TB, extra ...string) objects {
	t.Helper()
	out, err := runHelm(templateArgs(t, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// renderError runs `helm template` expecting it to refuse the values, and
// returns helm's message.
func renderError(t testing.TB, extra ...string) string {
	t.Helper()
	out, err := runHelm(templateArgs(t, extra...)...)
	if err == nil {
		t.Fatalf("helm template %v rendered instead of refusing:\n%s", extra, out)
	}
	return err.Error()
}

func decode(manifests string) (objects, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	var objs objects
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decoding rendered manifests: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, &u)
	}
}

// objects are rendered manifests.
type objects []*unstructured.Unstructured

// find returns the object of that kind and name, or nil.
func (o objects) find(kind, name string) *unstructured.Unstructured {
	for _, u := range o {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// get returns the object of that kind and name, failing the test without it.
func (o objects) get(t testing.TB, kind, name string) *unstructured.Unstructured {
	t.Helper()
	u := o.find(kind, name)
	if u == nil {
		t.Fatalf("no %s %q rendered; rendered: %s", kind, name, o)
	}
	return u
}

// ofKind returns the objects of one kind.
func (o objects) ofKind(kind string) objects {
	var out objects
	for _, u := range o {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

func (o objects) String() string {
	names := make([]string, 0, len(o))
	for _, u := range o {
		names = append(names, u.GetKind()+"/"+u.GetName())
	}
	return strings.Join(names, ", ")
}

// deployment returns a rendered Deployment, typed.
func (o objects) deployment(t testing.TB, name string) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	into(t, o.get(t, "Deployment", name), &d)
	return &d
}

// into converts a rendered object into a typed one.
func into(t testing.TB, u *unstructured.Unstructured, obj any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		t.Fatalf("%s/%s does not convert to %T (unknown or misplaced field?): %v", u.GetKind(), u.GetName(), obj, err)
	}
}
