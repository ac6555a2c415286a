package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"napwake.dev/shared/testenv"
)

const (
	// viewRole and editRole are the chart's roles for people.
	viewRole = release + "-view"
	editRole = release + "-edit"
	// aggregateTo is the label prefix the built-in user-facing roles select on.
	aggregateTo = "rbac.authorization.k8s.io/aggregate-to-"
)

// TestPeoplesRolesGrantOnlyWhatThePluginNeeds checks the rendered roles for
// people: view's reads go into view, edit and admin; edit's patch into edit
// and admin only; nothing else (no Secrets, no status, no create or delete).
func TestPeoplesRolesGrantOnlyWhatThePluginNeeds(t *testing.T) {
	objs := render(t)
	for _, tc := range []struct {
		name       string
		into, not  []string
		wantVerbs  []string
		whatItDoes string
	}{
		{viewRole, []string{"view", "edit", "admin"}, nil, []string{"get", "list", "watch"}, "status, describe, forecast, --wait"},
		{editRole, []string{"edit", "admin"}, []string{"view"}, []string{"patch"}, "wake, pause"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cr rbacv1.ClusterRole
			into(t, objs.get(t, "ClusterRole", tc.name), &cr)
			for _, r := range tc.into {
				if got := cr.Labels[aggregateTo+r]; got != "true" {
					t.Errorf("label %s%s = %q, want \"true\"", aggregateTo, r, got)
				}
			}
			for _, r := range tc.not {
				if got, ok := cr.Labels[aggregateTo+r]; ok {
					t.Errorf("label %s%s = %q, want none: %s must not reach %s", aggregateTo, r, got, tc.whatItDoes, r)
				}
			}
			want := []rbacv1.PolicyRule{{APIGroups: []string{"napwake.dev"}, Resources: []string{"managedworkloads"}, Verbs: tc.wantVerbs}}
			if !reflect.DeepEqual(cr.Rules, want) {
				t.Errorf("rules %+v, want only %+v (%s)", cr.Rules, want, tc.whatItDoes)
			}
			if cr.AggregationRule != nil {
				t.Errorf("aggregationRule %+v, want none", cr.AggregationRule)
			}
		})
	}
}

// Who the people test binds, in peopleNS, and the namespace none of them has.
const (
	peopleNS  = "team-a"
	strangeNS = "team-b"
	viewer    = "alice" // view in team-a
	editor    = "bob"   // edit in team-a
	nsAdmin   = "carol" // admin in team-a
	direct    = "dave"  // the chart's two roles in team-a, bound directly
)

// testPeopleAccess proves, on what helm installed, that people bound to the
// built-in roles in one namespace may run exactly the plugin's commands:
//
//   - kube-controller-manager's own clusterrole-aggregation controller (the
//     real binary, that controller only; envtest runs none) folds the
//     chart's roles into the view, edit and admin roles the API server
//     bootstrapped, by their labels;
//   - the plugin, built from this checkout and run impersonating each user
//     (--as), shows the viewer status and describe and refuses its wake and
//     pause naming edit, writing nothing; wakes and pauses for the editor
//     and the admin, writing their annotations, and follows the phase with
//     --wait; and refuses the editor in a namespace where it has no binding;
//   - the API server's authorizer gives edit nothing on ManagedWorkloads
//     beyond patch: no update, create, delete or status;
//   - bound directly, as rbac.aggregateClusterRoles=false leaves them, the
//     chart's two roles let the plugin look and wake, and give nothing else
//     (no Secrets, not even events).
func testPeopleAccess(t *testing.T) {
	ctx := context.Background()
	c := clientsAs(t, "")
	for _, ns := range []string{peopleNS, strangeNS} {
		if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		managedWorkload(t, ns, "api", nil)
		// Paused, as the operator would say: only its ServiceAccount may write status.
		if _, err := clientsAs(t, operatorUser).dyn.Resource(mwGVR).Namespace(ns).Patch(ctx, "api", types.MergePatchType,
			[]byte(`{"status":{"phase":"Paused"}}`), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []struct{ user, role string }{
		{viewer, "view"}, {editor, "edit"}, {nsAdmin, "admin"}, {direct, viewRole}, {direct, editRole},
	} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: peopleNS, Name: b.user + "-" + b.role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: b.user}}}
		if _, err := c.kube.RbacV1().RoleBindings(peopleNS).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The API server bootstraps view, edit and admin with aggregation rules
	// and leaves their rules to the controller: none of them reads
	// ManagedWorkloads until it runs.
	for _, role := range []string{"view", "edit", "admin"} {
		cr, err := c.kube.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the API server bootstrapped no %s ClusterRole: %v", role, err)
		}
		if cr.AggregationRule == nil || !slices.ContainsFunc(cr.AggregationRule.ClusterRoleSelectors, func(s metav1.LabelSelector) bool {
			return s.MatchLabels[aggregateTo+role] == "true"
		}) {
			t.Fatalf("the bootstrap %s ClusterRole does not aggregate %s%s: %+v", role, aggregateTo, role, cr.AggregationRule)
		}
	}
	if may(t, viewer, access{"list", "napwake.dev", "managedworkloads", "", peopleNS, ""}) {
		t.Fatal("view lets alice list ManagedWorkloads before any aggregation: this test would prove nothing")
	}
	runRoleAggregation(t)
	testenv.EventuallyWithin(t, pollTimeout, testenv.EventuallyInterval, "the chart's roles aggregated into view, edit and admin", func() error {
		for _, w := range []struct {
			user string
			a    access
		}{
			{viewer, access{"watch", "napwake.dev", "managedworkloads", "", peopleNS, ""}},
			{editor, access{"patch", "napwake.dev", "managedworkloads", "", peopleNS, "api"}},
			{nsAdmin, access{"patch", "napwake.dev", "managedworkloads", "", peopleNS, "api"}},
		} {
			if !may(t, w.user, w.a) {
				return fmt.Errorf("%s may not %v yet", w.user, w.a)
			}
		}
		return nil
	})

	t.Run("the authorizer gives each role only its verbs", func(t *testing.T) {
		for _, tc := range []struct {
			user string
			a    access
			want bool
		}{
			{viewer, access{"get", "napwake.dev", "managedworkloads", "", peopleNS, "api"}, true},
			// What else the plugin reads, view has of its own: events
			// (status, describe), Deployments and StatefulSets (savings).
			{viewer, access{"list", "", "events", "", peopleNS, ""}, true},
			{viewer, access{"get", "apps", "deployments", "", peopleNS, "api"}, true},
			{viewer, access{"get", "apps", "statefulsets", "", peopleNS, "api"}, true},
			{viewer, access{"patch", "napwake.dev", "managedworkloads", "", peopleNS, "api"}, false},
			{viewer, access{"list", "napwake.dev", "managedworkloads", "", strangeNS, ""}, false},
			{viewer, access{"list", "napwake.dev", "managedworkloads", "", "", ""}, false},
			{editor, access{"watch", "napwake.dev", "managedworkloads", "", peopleNS, ""}, true},
			{editor, access{"update", "napwake.dev", "managedworkloads", "", peopleNS, "api"}, false},
			{editor, access{"create", "napwake.dev", "managedworkloads", "", peopleNS, ""}, false},
			{editor, access{"delete", "napwake.dev", "managedworkloads", "", peopleNS, "api"}, false},
			{editor, access{"deletecollection", "napwake.dev", "managedworkloads", "", peopleNS, ""}, false},
			{editor, access{"patch", "napwake.dev", "managedworkloads", "status", peopleNS, "api"}, false},
			{editor, access{"patch", "napwake.dev", "managedworkloads", "", strangeNS, "api"}, false},
			{nsAdmin, access{"delete", "napwake.dev", "managedworkloads", "", peopleNS, "api"}, false},
			{nsAdmin, access{"update", "napwake.dev", "managedworkloads", "status", peopleNS, "api"}, false},
			// Bound directly (what rbac.aggregateClusterRoles=false leaves
			// to the cluster admin), the chart's roles give the same.
			{direct, access{"watch", "napwake.dev", "managedworkloads", "", peopleNS, ""}, true},
			{direct, access{"patch", "napwake.dev", "managedworkloads", "", peopleNS, "api"}, true},
			{direct, access{"update", "napwake.dev", "managedworkloads", "", peopleNS, "api"}, false},
			{direct, access{"delete", "napwake.dev", "managedworkloads", "", peopleNS, "api"}, false},
			{direct, access{"patch", "napwake.dev", "managedworkloads", "status", peopleNS, "api"}, false},
			{direct, access{"get", "", "secrets", "", peopleNS, ""}, false},
			{direct, access{"list", "", "events", "", peopleNS, ""}, false},
		} {
			if got := may(t, tc.user, tc.a); got != tc.want {
				t.Errorf("%s may %v: %v, want %v", tc.user, tc.a, got, tc.want)
			}
		}
	})

	bin := pluginBinary(t)
	kc := kubeconfig(t)
	napwake := func(user string, args ...string) pluginRun { return runPlugin(t, bin, kc, user, args...) }

	t.Run("a viewer sees status, describe, forecast and savings, and may not wake or pause", func(t *testing.T) {
		r := napwake(viewer, "status", "-n", peopleNS)
		r.wantOK(t)
		if !strings.Contains(r.stdout, "api") || !strings.Contains(r.stdout, "Paused") {
			t.Errorf("status printed:\n%s", r.stdout)
		}
		r = napwake(viewer, "describe", "api", "-n", peopleNS)
		r.wantOK(t)
		if !strings.Contains(r.stdout, "api") || !strings.Contains(r.stdout, "Paused") {
			t.Errorf("describe printed:\n%s", r.stdout)
		}
		napwake(viewer, "forecast", "api", "-n", peopleNS).wantOK(t)
		napwake(viewer, "savings", "-n", peopleNS).wantOK(t)
		for verb, key := range map[string]string{"wake": "napwake.dev/wake-requested", "pause": "napwake.dev/pause-requested"} {
			r = napwake(viewer, verb, "api", "-n", peopleNS)
			r.wantRefused(t, "error: setting "+key+` on ManagedWorkload api: not allowed: managedworkloads.napwake.dev "api" is forbidden: User "alice" cannot patch resource "managedworkloads" in API group "napwake.dev" in the namespace "team-a": `+
				"wake and pause take the ClusterRole edit or admin in namespace team-a (view only reads): ask a cluster admin for a RoleBinding "+
				"(`kubectl create rolebinding <name> --clusterrole=edit --user=<you> -n team-a`), or use another --context")
		}
		if anns := annotations(t, peopleNS); len(anns) != 0 {
			t.Errorf("a refused wake or pause wrote %v", anns)
		}
		r = napwake(viewer, "status", "-A")
		r.wantRefused(t, "error: listing ManagedWorkloads: not allowed: ")
		if !strings.Contains(r.stderr, "--clusterrole=view") || !strings.Contains(r.stderr, "leave out -A") {
			t.Errorf("-A refused without naming the binding or the way out: %s", r.stderr)
		}
	})

	t.Run("an editor wakes and pauses in its namespace only", func(t *testing.T) {
		start := time.Now().UTC().Truncate(time.Second)
		r := napwake(editor, "wake", "api", "-n", peopleNS)
		r.wantOK(t)
		wantStamp(t, annotations(t, peopleNS), "napwake.dev/wake-requested", start, 0)
		r = napwake(editor, "pause", "api", "-n", peopleNS, "--until", "2h")
		r.wantOK(t)
		anns := annotations(t, peopleNS)
		wantStamp(t, anns, "napwake.dev/pause-requested", start, 0)
		wantStamp(t, anns, "napwake.dev/pause-until", start, 2*time.Hour)
		if _, ok := anns["napwake.dev/keep-awake-until"]; ok {
			t.Errorf("pause left keep-awake-until: %v", anns)
		}
		// --wait watches the phase (view's watch reaches edit); no operator
		// runs here, so it stays Paused and the wait times out.
		r = napwake(editor, "wake", "api", "-n", peopleNS, "--wait", "--timeout", "2s")
		if !strings.Contains(r.stdout, "waiting for team-a/api to be Running: Paused") || !strings.HasPrefix(r.stderr, "error: team-a/api is still Paused after 2") {
			t.Errorf("wake --wait: %v\nstdout: %s\nstderr: %s", r.err, r.stdout, r.stderr)
		}

		r = napwake(editor, "wake", "api", "-n", strangeNS)
		r.wantRefused(t, `error: getting ManagedWorkload api: not allowed: managedworkloads.napwake.dev "api" is forbidden: User "bob" cannot get resource "managedworkloads" in API group "napwake.dev" in the namespace "team-b": `+
			"reading ManagedWorkloads takes the ClusterRole view, edit or admin in namespace team-b: ask a cluster admin for a RoleBinding "+
			"(`kubectl create rolebinding <name> --clusterrole=view --user=<you> -n team-b`), or use another --context")
		if anns := annotations(t, strangeNS); len(anns) != 0 {
			t.Errorf("a refused wake in team-b wrote %v", anns)
		}
	})

	t.Run("the chart's roles bound directly look and pause", func(t *testing.T) {
		napwake(direct, "status", "-n", peopleNS).wantOK(t)
		start := time.Now().UTC().Truncate(time.Second)
		napwake(direct, "pause", "api", "-n", peopleNS).wantOK(t)
		wantStamp(t, annotations(t, peopleNS), "napwake.dev/pause-requested", start, 0)
	})

	t.Run("an admin wakes", func(t *testing.T) {
		start := time.Now().UTC().Truncate(time.Second)
		r := napwake(nsAdmin, "wake", "api", "-n", peopleNS, "--until", "30m")
		r.wantOK(t)
		anns := annotations(t, peopleNS)
		wantStamp(t, anns, "napwake.dev/keep-awake-until", start, 30*time.Minute)
		if _, ok := anns["napwake.dev/pause-until"]; ok {
			t.Errorf("wake --until left pause-until: %v", anns)
		}
	})
}

// may asks the API server's authorizer whether user (a person: only the
// group system:authenticated) may do a.
func may(t *testing.T, user string, a access) bool {
	t.Helper()
	return review(t, user, []string{"system:authenticated"}, a)
}

// annotations returns the napwake.dev annotations of ManagedWorkload api in ns.
func annotations(t *testing.T, ns string) map[string]string {
	t.Helper()
	mw, err := clientsAs(t, "").dyn.Resource(mwGVR).Namespace(ns).Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range mw.GetAnnotations() {
		if strings.HasPrefix(k, "napwake.dev/") {
			out[k] = v
		}
	}
	return out
}

// wantStamp checks that anns[key] is an RFC 3339 time of the API server's
// clock, after plus from the moment the command started (this machine's
// clock is the API server's here).
func wantStamp(t *testing.T, anns map[string]string, key string, start time.Time, plus time.Duration) {
	t.Helper()
	v, ok := anns[key]
	if !ok {
		t.Errorf("no %s after the command: %v", key, anns)
		return
	}
	got, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t.Errorf("%s = %q, not RFC 3339: %v", key, v, err)
		return
	}
	if from, to := start.Add(plus), time.Now().Add(plus+time.Second); got.Before(from) || got.After(to) {
		t.Errorf("%s = %s, want between %s and %s", key, v, from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
}

// pluginRun is what one run of the plugin binary printed, and how it ended.
type pluginRun struct {
	args           []string
	stdout, stderr string
	err            error
}

func (r pluginRun) wantOK(t *testing.T) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("kubectl-napwake %s: %v\nstderr: %s\nstdout: %s", strings.Join(r.args, " "), r.err, r.stderr, r.stdout)
	}
}

// wantRefused checks that the run exited 1 having printed one line on
// stderr, starting with want, and nothing on stdout.
func (r pluginRun) wantRefused(t *testing.T, want string) {
	t.Helper()
	var exit *exec.ExitError
	if !errors.As(r.err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("kubectl-napwake %s: %v, want exit code 1\nstderr: %s\nstdout: %s", strings.Join(r.args, " "), r.err, r.stderr, r.stdout)
	}
	if !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("kubectl-napwake %s printed\n  %q\nwant one line starting\n  %q", strings.Join(r.args, " "), r.stderr, want)
	}
	if r.stdout != "" {
		t.Errorf("kubectl-napwake %s printed on stdout: %q", strings.Join(r.args, " "), r.stdout)
	}
}

// runPlugin runs the plugin binary with the admin's kubeconfig,
// impersonating user (--as) as kubectl users do.
func runPlugin(t *testing.T, bin, kubeconfig, user string, args ...string) pluginRun {
	t.Helper()
	args = append(args, "--kubeconfig", kubeconfig, "--as", user)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Only --kubeconfig counts, and no cache lands in the user's home.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "HOME=") })
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir(), "NO_COLOR=1")
	err := cmd.Run()
	return pluginRun{args: args, stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// pluginBinary builds kubectl-napwake from this checkout into a directory of
// the test's.
func pluginBinary(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kubectl-napwake")
	cmd := exec.Command("go", "build", "-o", bin, "./kubectl-napwake")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-napwake: %v\n%s", err, out)
	}
	return bin
}

// runRoleAggregation runs kube-controller-manager with only its
// clusterrole-aggregation controller against the envtest API server, until
// the test ends: envtest runs no controller-manager, and without this
// controller no ClusterRole's aggregationRule is ever filled.
func runRoleAggregation(t *testing.T) {
	t.Helper()
	bin, err := controllerManager()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+kubeconfig(t),
		"--controllers=clusterrole-aggregation-controller", "--leader-elect=false", "--secure-port=0")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a killed test binary leaves no controller behind
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting kube-controller-manager: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("kube-controller-manager's log:\n%s", logs.String())
		}
	})
}

// controllerManager returns the test bed's kube-controller-manager, from the
// envtest binaries' directory, building it there when it is missing
// (seconds once cached; `make test-unit` builds it with the others).
func controllerManager() (string, error) {
	dir, err := testenv.AssetsDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kube-controller-manager")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "hack/testbed/build-binaries.sh"), "kube-controller-manager")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building kube-controller-manager with hack/testbed/build-binaries.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return filepath.Join(lines[len(lines)-1], "kube-controller-manager"), nil
}

// syncBuffer is a bytes.Buffer a process's two streams may write at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
