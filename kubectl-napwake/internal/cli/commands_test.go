package cli

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/kubectl-napwake/internal/render"
	"napwake.dev/shared/testenv"
)

// statusFleet creates a paused, a running and a pausing workload in ns, and
// an InvalidSetting event on the running one's Deployment.
func statusFleet(t *testing.T, ns string) []*napwakev1alpha1.ManagedWorkload {
	t.Helper()
	api := createWorkload(t, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			Dependencies: []napwakev1alpha1.DependencyRef{{Name: "postgres"}},
			Forecast:     &napwakev1alpha1.ForecastSpec{TimeZone: "UTC"},
		},
		Status: napwakev1alpha1.ManagedWorkloadStatus{
			Phase:              napwakev1alpha1.PhasePaused,
			Pause:              &napwakev1alpha1.PauseStatus{StartedAt: at(-2 * time.Hour), Replicas: 3, Reason: napwakev1alpha1.PauseIdle},
			LastActivity:       atp(-150 * time.Minute),
			LastActivitySource: napwakev1alpha1.SourceRequest,
			ResumedAt:          atp(-5 * time.Hour),
			TurnedAway:         &napwakev1alpha1.TurnedAwayStatus{PausedAt: at(-2 * time.Hour), Requests: 312},
			Doorman: &napwakev1alpha1.DoormanStatus{Routes: []napwakev1alpha1.Route{
				{Service: "api", PortName: "http", Port: 80, DoormanPort: 20017, IPFamilies: []napwakev1alpha1.IPFamily{"IPv4"}},
			}},
			Conditions: []metav1.Condition{{Type: napwakev1alpha1.ConditionWakeOnRequest, Status: metav1.ConditionTrue,
				Reason: napwakev1alpha1.ReasonDoormanRouted, Message: "Service api routed", LastTransitionTime: at(-2 * time.Hour)}},
		},
	})
	web := createWorkload(t, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "web-frontend"}},
		Status: napwakev1alpha1.ManagedWorkloadStatus{
			Phase:              napwakev1alpha1.PhaseRunning,
			LastActivity:       atp(-12 * time.Minute),
			LastActivitySource: napwakev1alpha1.SourceWakeRequested,
			PauseAt:            atp(18 * time.Minute),
			ResumedAt:          atp(-45 * time.Minute),
			Conditions: []metav1.Condition{{Type: napwakev1alpha1.ConditionWakeOnRequest, Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonNotPaused,
				Message: napwakev1alpha1.CarriedOverPrefix + "Service web is also served by pods of Deployment legacy", LastTransitionTime: at(-45 * time.Minute)}},
		},
	})
	db := createWorkload(t, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "postgres"},
		Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindStatefulSet, Name: "postgres"}},
		Status: napwakev1alpha1.ManagedWorkloadStatus{
			Phase:              napwakev1alpha1.PhasePausing,
			Pause:              &napwakev1alpha1.PauseStatus{StartedAt: at(-20 * time.Second), Replicas: 1, Reason: napwakev1alpha1.PauseRequested},
			LastActivitySource: napwakev1alpha1.SourceCreated,
			Conditions: []metav1.Condition{{Type: napwakev1alpha1.ConditionWakeOnRequest, Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonNodeLocalTraffic,
				Message: "Service postgres has internalTrafficPolicy: Local", LastTransitionTime: at(-20 * time.Second)}},
		},
	})
	createEvent(t, ns, "Deployment", "web-frontend", napwakev1alpha1.EventInvalidSetting, corev1.EventTypeWarning,
		`napwake.dev/wake "yes" is neither request nor ask: asking`, at(-5*time.Minute))
	createEvent(t, ns, "ManagedWorkload", "api", napwakev1alpha1.EventPaused, corev1.EventTypeNormal, "Paused after 30m idle; 3 replicas kept", at(-2*time.Hour))
	createEvent(t, ns, "ManagedWorkload", "api", napwakev1alpha1.EventWaking, corev1.EventTypeNormal, "Woken by a request from 10.0.0.7", at(-5*time.Hour))
	return []*napwakev1alpha1.ManagedWorkload{api, web, db}
}

func mustSucceed(t *testing.T, r result) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("command failed: %v\nstderr: %s", r.err, r.errOut)
	}
}

func TestStatusAndDescribeMatchGoldenTables(t *testing.T) {
	ns := namespace(t, "golden")
	statusFleet(t, ns)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"status", []string{"status", "-n", ns}},
		{"status-wide", []string{"status", "-n", ns, "-o", "wide"}},
		{"describe-paused", []string{"describe", "api", "-n", ns}},
		{"describe-running", []string{"describe", "web", "-n", ns}},
		{"forecast-no-data", []string{"forecast", "api", "-n", ns}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := run(t, adminKubeconfig, nil, tc.args...)
			mustSucceed(t, r)
			golden(t, tc.golden, r.out)
		})
	}
}

func TestStatusAllNamespacesListsEveryNamespace(t *testing.T) {
	a, b := namespace(t, "all-a"), namespace(t, "all-b")
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "one"}, Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning}})
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "two"}, Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhasePaused,
		Pause: &napwakev1alpha1.PauseStatus{StartedAt: at(-time.Hour), Replicas: 2, Reason: napwakev1alpha1.PauseIdle}}})
	r := run(t, adminKubeconfig, nil, "status", "-A")
	mustSucceed(t, r)
	if !strings.HasPrefix(r.out, "NAMESPACE ") {
		t.Errorf("-A table does not start with a NAMESPACE column:\n%s", r.out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^all-a\s+one\s+Running\s`),
		regexp.MustCompile(`(?m)^all-b\s+two\s+Paused\s+Deployment/two\s+2\s+60m\s`),
	} {
		if !want.MatchString(r.out) {
			t.Errorf("status -A lacks a row matching %s:\n%s", want, r.out)
		}
	}
	empty := namespace(t, "empty")
	r = run(t, adminKubeconfig, nil, "status", "-n", empty)
	mustSucceed(t, r)
	if r.out != "No ManagedWorkloads found in namespace empty.\n" {
		t.Errorf("empty namespace: got %q", r.out)
	}
}

// TestOutputRoundTrips decodes -o json and -o yaml back into the API types
// and compares them with what the API server holds.
func TestOutputRoundTrips(t *testing.T) {
	ns := namespace(t, "roundtrip")
	created := statusFleet(t, ns)
	decoders := map[string]func([]byte, any) error{"json": json.Unmarshal, "yaml": func(b []byte, v any) error { return yaml.Unmarshal(b, v) }}
	for format, decode := range decoders {
		t.Run("status -o "+format, func(t *testing.T) {
			r := run(t, adminKubeconfig, nil, "status", "-n", ns, "-o", format)
			mustSucceed(t, r)
			var list napwakev1alpha1.ManagedWorkloadList
			if err := decode([]byte(r.out), &list); err != nil {
				t.Fatalf("decoding: %v\n%s", err, r.out)
			}
			if list.Kind != "ManagedWorkloadList" || list.APIVersion != napwakev1alpha1.GroupVersion.String() {
				t.Errorf("list is %s %s, want ManagedWorkloadList %s", list.APIVersion, list.Kind, napwakev1alpha1.GroupVersion)
			}
			if len(list.Items) != len(created) {
				t.Fatalf("got %d items, want %d", len(list.Items), len(created))
			}
			byName := map[string]napwakev1alpha1.ManagedWorkload{}
			for _, mw := range list.Items {
				byName[mw.Name] = mw
			}
			for _, want := range created {
				got := byName[want.Name]
				if !equality.Semantic.DeepEqual(got.Spec, want.Spec) || !equality.Semantic.DeepEqual(got.Status, want.Status) {
					t.Errorf("%s did not round-trip:\ngot  %+v\nwant %+v", want.Name, got, want)
				}
			}
		})
		t.Run("describe -o "+format, func(t *testing.T) {
			r := run(t, adminKubeconfig, nil, "describe", "api", "-n", ns, "-o", format)
			mustSucceed(t, r)
			var got napwakev1alpha1.ManagedWorkload
			if err := decode([]byte(r.out), &got); err != nil {
				t.Fatalf("decoding: %v\n%s", err, r.out)
			}
			if got.Kind != "ManagedWorkload" || !equality.Semantic.DeepEqual(got.Status, created[0].Status) || !equality.Semantic.DeepEqual(got.Spec, created[0].Spec) {
				t.Errorf("describe -o %s did not round-trip:\n%s", format, r.out)
			}
		})
	}
}

func TestForecastDrawsTheWeek(t *testing.T) {
	ns := namespace(t, "forecast")
	// Weekdays busy 09-17, a person at 10 of each last week.
	w := napwakev1alpha1.ForecastWeek{Hours: 3 * 168}
	var lw napwakev1alpha1.LastWeek
	for slot := range 5 * 24 {
		if h := slot % 24; h >= 9 && h < 18 {
			w.Shares[slot], lw.Busy[slot], lw.Person[slot] = 0.6, true, h == 10
		}
	}
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{Forecast: &napwakev1alpha1.ForecastSpec{AutoResume: true, TimeZone: "America/New_York", Mode: napwakev1alpha1.ForecastObserve}},
		Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning,
			Forecast: &napwakev1alpha1.ForecastStatus{State: napwakev1alpha1.WriteForecastState(w), LastWeek: napwakev1alpha1.EncodeLastWeek(lw),
				Figures: &napwakev1alpha1.ForecastFigures{Since: atp(-21 * 24 * time.Hour), ColdStartsPerson: 9, ForecastWakes: 10, ForecastWakesUsed: 7,
					ColdStartsAvoided: 7, AwakeSeconds: map[string]int64{"request": 7200}}}}})
	r := run(t, adminKubeconfig, nil, "forecast", "api", "-n", ns)
	mustSucceed(t, r)
	golden(t, "forecast-week", r.out)

	r = run(t, adminKubeconfig, nil, "forecast", "api", "-n", ns, "-o", "json")
	mustSucceed(t, r)
	var v render.ForecastView
	if err := json.Unmarshal([]byte(r.out), &v); err != nil {
		t.Fatalf("forecast -o json: %v\n%s", err, r.out)
	}
	if len(v.Shares) != 168 || v.Shares[10] != 0.6 || v.LastWeek[10] != "hit" || v.LastWeek[11] != "unused" || v.HistoryHours != 3*168 ||
		v.Mode != "Observe" || v.Figures == nil || v.Figures.ForecastWakesUsed != 7 {
		t.Errorf("forecast -o json read %+v", v)
	}
	if r := run(t, adminKubeconfig, nil, "forecast", "api", "-n", ns, "-o", "yaml"); r.err == nil {
		t.Error("forecast -o yaml succeeded; only json is supported")
	}
}

func TestVersionReadsTheOperatorsPodLabel(t *testing.T) {
	r := run(t, adminKubeconfig, nil, "version")
	mustSucceed(t, r)
	if !strings.Contains(r.out, "Operator: unknown (no operator pods labelled control-plane=controller-manager,app.kubernetes.io/name=napwake") {
		t.Errorf("before the operator runs:\n%s", r.out)
	}
	ns := namespace(t, "napwake-system")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "napwake-controller-manager-0", Labels: map[string]string{
			napwakev1alpha1.LabelControlPlane: napwakev1alpha1.ControlPlaneOperator, napwakev1alpha1.LabelAppName: napwakev1alpha1.AppName, napwakev1alpha1.LabelAppVersion: "v0.3.1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "napwake-operator:v0.3.1"}}},
	}
	if err := admin.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	r = run(t, adminKubeconfig, nil, "version")
	mustSucceed(t, r)
	if !regexp.MustCompile(`(?m)^Plugin:   kubectl-napwake dev \(go[^ ]+, [a-z0-9]+/[a-z0-9]+\)`).MatchString(r.out) ||
		!strings.Contains(r.out, "\nOperator: v0.3.1 (namespace napwake-system)\n") {
		t.Errorf("version printed:\n%s", r.out)
	}
	r = run(t, adminKubeconfig, nil, "version", "-o", "json")
	mustSucceed(t, r)
	var rep render.VersionReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("decoding %q: %v", r.out, err)
	}
	if rep.Plugin.Component != Component || rep.Operator.Version != "v0.3.1" || rep.Operator.Namespace != "napwake-system" {
		t.Errorf("version -o json = %+v", rep)
	}
	// Someone who may not list pods still gets the plugin's version.
	r = run(t, aliceKubeconfig, nil, "version")
	mustSucceed(t, r)
	if !strings.Contains(r.out, "Operator: unknown (listing the operator's pods: not allowed: ") {
		t.Errorf("as alice:\n%s", r.out)
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// kubeconfigFor writes a kubeconfig pointing at server, with no credentials.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server +
		"\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadInputIsOneClearLine runs each mistake a user can make against the
// real API server: each must fail with one line naming what to do.
func TestBadInputIsOneClearLine(t *testing.T) {
	ns := namespace(t, "elsewhere")
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lonely"}})
	addr := closedPort(t)
	unreachable := kubeconfigFor(t, "https://"+addr)
	for _, tc := range []struct {
		name       string
		kubeconfig string
		args       []string
		want       string
	}{
		{"an unknown workload", adminKubeconfig, []string{"describe", "nope", "-n", ns},
			`ManagedWorkload "nope" not found in namespace "elsewhere": list the workloads with ` + "`kubectl napwake status -n elsewhere`, or in every namespace with -A"},
		{"the wrong namespace", adminKubeconfig, []string{"wake", "lonely", "-n", "default"},
			`ManagedWorkload "lonely" not found in namespace "default", but namespace "elsewhere" has one: add -n elsewhere`},
		{"no permission to list", aliceKubeconfig, []string{"status", "-n", ns},
			`listing ManagedWorkloads: not allowed: managedworkloads.napwake.dev is forbidden: User "alice" cannot list resource "managedworkloads" in API group "napwake.dev" in the namespace "elsewhere": ` +
				"reading ManagedWorkloads takes the ClusterRole view, edit or admin in namespace elsewhere: ask a cluster admin for a RoleBinding " +
				"(`kubectl create rolebinding <name> --clusterrole=view --user=<you> -n elsewhere`), or use another --context"},
		{"no permission to list in every namespace", aliceKubeconfig, []string{"status", "-A"},
			`listing ManagedWorkloads: not allowed: managedworkloads.napwake.dev is forbidden: User "alice" cannot list resource "managedworkloads" in API group "napwake.dev" at the cluster scope: ` +
				"reading ManagedWorkloads takes the ClusterRole view, edit or admin in every namespace for -A: ask a cluster admin for a ClusterRoleBinding " +
				"(`kubectl create clusterrolebinding <name> --clusterrole=view --user=<you>`), or leave out -A and pass -n"},
		{"no permission to get", aliceKubeconfig, []string{"pause", "lonely", "-n", ns},
			`getting ManagedWorkload lonely: not allowed: managedworkloads.napwake.dev "lonely" is forbidden: User "alice" cannot get resource "managedworkloads" in API group "napwake.dev" in the namespace "elsewhere": ` +
				"reading ManagedWorkloads takes the ClusterRole view, edit or admin in namespace elsewhere: ask a cluster admin for a RoleBinding " +
				"(`kubectl create rolebinding <name> --clusterrole=view --user=<you> -n elsewhere`), or use another --context"},
		{"an unreachable cluster", unreachable, []string{"status"},
			"cannot reach the Kubernetes API server at https://" + addr + " (connection refused): check that the cluster is up and that --context/--kubeconfig point at it"},
		{"no name", adminKubeconfig, []string{"wake"},
			"kubectl napwake wake needs a ManagedWorkload name, several, or -l SELECTOR, e.g. kubectl napwake wake api -n preview-42"},
		{"an unknown output format", adminKubeconfig, []string{"status", "-n", ns, "-o", "xml"},
			`-o/--output "xml" is not a format this command prints: use one of wide, json, yaml,`},
		{"an unknown flag", adminKubeconfig, []string{"status", "--colour"},
			"unknown flag: --colour: see kubectl napwake status --help"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.kubeconfig, nil, tc.args...)
			assertOneLine(t, r, tc.want)
		})
	}
}

// assertOneLine checks that r failed with a one-line error starting with want
// (the whole line, when want ends the sentence) and printed nothing else.
func assertOneLine(t *testing.T, r result, want string) {
	t.Helper()
	if r.err == nil {
		t.Fatalf("succeeded; printed:\n%s", r.out)
	}
	msg := r.err.Error()
	if strings.Contains(msg, "\n") || strings.Contains(msg, "goroutine ") {
		t.Errorf("error is not one line: %q", msg)
	}
	if !strings.HasPrefix(msg, want) {
		t.Errorf("error\n  %q\ndoes not start with\n  %q", msg, want)
	}
	if r.out != "" || r.errOut != "" {
		t.Errorf("printed besides the error: stdout %q, stderr %q", r.out, r.errOut)
	}
}

func TestVersionAnswersWhenTheClusterIsUnreachable(t *testing.T) {
	addr := closedPort(t)
	r := run(t, kubeconfigFor(t, "https://"+addr), nil, "version")
	mustSucceed(t, r)
	if !strings.Contains(r.out, "Operator: unknown (cannot reach the Kubernetes API server at https://"+addr+" (connection refused)") {
		t.Errorf("version printed:\n%s", r.out)
	}
}

// TestAViewerMayLookButNotWake gives a user a Role that reads
// ManagedWorkloads but may not patch them: status works, wake fails with the
// API server's reason and the role and binding that would allow it in one
// line, and nothing is written.
func TestAViewerMayLookButNotWake(t *testing.T) {
	ns := namespace(t, "viewer")
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhasePaused, Pause: &napwakev1alpha1.PauseStatus{StartedAt: at(-time.Hour), Replicas: 1, Reason: napwakev1alpha1.PauseIdle}}})
	rbacScheme := runtime.NewScheme()
	if err := rbacv1.AddToScheme(rbacScheme); err != nil {
		t.Fatal(err)
	}
	rc, err := client.New(env.Config, client.Options{Scheme: rbacScheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "napwake-viewer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{napwakev1alpha1.GroupVersion.Group}, Resources: []string{"managedworkloads"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bob-views"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "bob"}}}
	for _, obj := range []client.Object{role, binding} {
		if err := rc.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	bob, err := writeUserKubeconfig(env, t.TempDir(), envtest.User{Name: "bob"}, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// RBAC caches settle within moments; poll until bob may list.
	testenv.EventuallyTrue(t, "bob's Role to apply", func() bool { return run(t, bob, nil, "status", "-n", ns).err == nil })
	r := run(t, bob, nil, "status", "-n", ns)
	mustSucceed(t, r)
	if !strings.Contains(r.out, "api    Paused") {
		t.Errorf("bob's status:\n%s", r.out)
	}
	r = run(t, bob, nil, "wake", "api", "-n", ns)
	assertOneLine(t, r, `setting napwake.dev/wake-requested on ManagedWorkload api: not allowed: managedworkloads.napwake.dev "api" is forbidden: User "bob" cannot patch resource "managedworkloads" in API group "napwake.dev" in the namespace "viewer": `+
		"wake and pause take the ClusterRole edit or admin in namespace viewer (view only reads): ask a cluster admin for a RoleBinding "+
		"(`kubectl create rolebinding <name> --clusterrole=edit --user=<you> -n viewer`), or use another --context")
	var mw napwakev1alpha1.ManagedWorkload
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api"}, &mw); err != nil {
		t.Fatal(err)
	}
	if _, set := mw.Annotations[napwakev1alpha1.AnnotationWakeRequested]; set {
		t.Errorf("a refused wake still set the annotation: %v", mw.Annotations)
	}
}

// TestCRDMissing runs the plugin against a second API server that has no
// Napwake CRD installed.
func TestCRDMissing(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	bare := &envtest.Environment{BinaryAssetsDirectory: assets}
	api := bare.ControlPlane.GetAPIServer()
	api.Configure().Set("advertise-address", "127.0.0.1")
	api.Configure().Set("endpoint-reconciler-type", "none")
	cfg, err := bare.Start()
	if err != nil {
		t.Fatalf("starting an API server without CRDs: %v", err)
	}
	t.Cleanup(func() { _ = bare.Stop() })
	kc, err := writeUserKubeconfig(bare, t.TempDir(), envtest.User{Name: "admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := "the ManagedWorkload API (napwake.dev/v1alpha1) is not installed in the cluster at " + strings.TrimSuffix(cfg.Host, "/") +
		": install Napwake (its Helm chart installs the CRD), or pick the right --context"
	for _, args := range [][]string{{"status"}, {"describe", "api"}, {"wake", "api"}, {"forecast", "api"}} {
		t.Run(args[0], func(t *testing.T) {
			r := run(t, kc, nil, args...)
			assertOneLine(t, r, want)
		})
	}
}
