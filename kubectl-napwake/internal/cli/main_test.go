package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// now is the fixed moment tables are rendered at (whole seconds: the API
// server stores times to the second).
var now = time.Date(2026, 10, 27, 14, 30, 0, 0, time.UTC)

var (
	// env is the real API server every test talks to.
	env *envtest.Environment
	// admin is a client with every right, for setting up and checking.
	admin client.Client
	// adminKubeconfig and aliceKubeconfig are kubeconfig files: a
	// system:masters user, and a user no RBAC rule grants anything.
	adminKubeconfig, aliceKubeconfig string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Unsetenv("KUBECONFIG")
	os.Exit(testenv.Run(m, setup))
}

// setup makes the admin client and the kubeconfigs the tests use.
func setup(s *testenv.Suite) (err error) {
	env = s.Env
	dir, err := os.MkdirTemp("", "napwake-plugin-test-")
	if err != nil {
		return err
	}
	s.Cleanup(func() { _ = os.RemoveAll(dir) })
	if admin, err = client.New(s.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if adminKubeconfig, err = writeUserKubeconfig(env, dir, envtest.User{Name: "admin", Groups: []string{"system:masters"}}, s.Config); err != nil {
		return err
	}
	aliceKubeconfig, err = writeUserKubeconfig(env, dir, envtest.User{Name: "alice"}, s.Config)
	return err
}

func writeUserKubeconfig(e *envtest.Environment, dir string, u envtest.User, cfg *rest.Config) (string, error) {
	au, err := e.AddUser(u, cfg)
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", u.Name, err)
	}
	kc, err := au.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("writing kubeconfig of %s: %w", u.Name, err)
	}
	path := filepath.Join(dir, u.Name+".kubeconfig")
	return path, os.WriteFile(path, kc, 0o600)
}

// result is what one plugin run printed and returned.
type result struct {
	out, errOut string
	err         error
}

// run runs the plugin's command line against the test API server with the
// given kubeconfig, at the fixed moment now unless clk says otherwise.
func run(t *testing.T, kubeconfig string, clk clock.WithTicker, args ...string) result {
	t.Helper()
	if clk == nil {
		clk = testclock.NewFakeClock(now)
	}
	var out, errOut bytes.Buffer
	o := &Options{
		ConfigFlags: genericclioptions.NewConfigFlags(false),
		IO:          genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Clock:       clk,
	}
	cmd := NewCommand(o)
	if len(args) > 0 && args[0] == cobra.ShellCompRequestCmd {
		// A completion request completes its last word: the flag goes first.
		args = append([]string{args[0], "--kubeconfig", kubeconfig}, args[1:]...)
	} else {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	return result{out: out.String(), errOut: errOut.String(), err: err}
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to write it): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update if intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func at(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
func atp(d time.Duration) *metav1.Time {
	t := at(d)
	return &t
}

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := admin.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// createWorkload creates mw and then writes its status, as the operator would.
func createWorkload(t *testing.T, mw *napwakev1alpha1.ManagedWorkload) *napwakev1alpha1.ManagedWorkload {
	t.Helper()
	ctx := context.Background()
	status := mw.Status
	if mw.Spec.TargetRef.Kind == "" {
		mw.Spec.TargetRef = napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: mw.Name}
	}
	if err := admin.Create(ctx, mw); err != nil {
		t.Fatalf("creating ManagedWorkload %s: %v", mw.Name, err)
	}
	mw.Status = status
	if err := admin.Status().Update(ctx, mw); err != nil {
		t.Fatalf("writing status of ManagedWorkload %s: %v", mw.Name, err)
	}
	return mw
}

// createEvent records an event about obj, last seen at when.
func createEvent(t *testing.T, ns, kind, name, reason, typ, msg string, when metav1.Time) {
	t.Helper()
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-"},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name},
		Reason:         reason, Type: typ, Message: msg,
		FirstTimestamp: when, LastTimestamp: when, Count: 1,
		Source: corev1.EventSource{Component: "napwake-operator"},
	}
	if err := admin.Create(context.Background(), e); err != nil {
		t.Fatalf("creating event: %v", err)
	}
}
