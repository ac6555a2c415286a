package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/config"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/operator/internal/promquery"
	"napwake.dev/shared/testenv"
	"napwake.dev/shared/testnet"
)

// These tests run the whole operator, as main builds it, against a real
// kube-apiserver (envtest). There is no kube-controller-manager: the tests
// set Deployment status themselves where a pause waits for pods to go.

var (
	restCfg *rest.Config
	k8s     client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(s *testenv.Suite) error {
		cfg := s.Config
		restCfg = cfg
		scheme, err := Scheme()
		if err == nil {
			k8s, err = client.New(cfg, client.Options{Scheme: scheme})
		}
		if err == nil {
			err = k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "napwake-system"}})
		}
		return err
	}))
}

// clockStart is after the real time: creationTimestamps come from the API server's clock.
var clockStart = time.Now().UTC().Truncate(time.Second).Add(time.Minute)

type started struct {
	mgr    ctrl.Manager
	cancel context.CancelFunc
	done   chan struct{} // closed once Start returned, err set
	err    error
	clock  *clocktesting.FakeClock
}

func (s *started) stop(t testing.TB) {
	t.Helper()
	s.cancel()
	select {
	case <-s.done:
		if s.err != nil {
			t.Errorf("manager: %v", s.err)
		}
	case <-time.After(30 * time.Second):
		t.Error("manager did not stop within 30s")
	}
}

func testConfig() config.Config {
	c := config.Default(func(string) string { return "" })
	c.MetricsBindAddress = "0"
	c.HealthProbeBindAddress = "0"
	c.LeaderElect = false
	c.DefaultIdleAfter = time.Hour
	return c
}

func start(t testing.TB, cfg config.Config, m *metrics.Metrics) *started {
	t.Helper()
	return startAs(t, cfg, m, "")
}

// startAs is start with a leader election identity ("": a random one).
func startAs(t testing.TB, cfg config.Config, m *metrics.Metrics, identity string) *started {
	t.Helper()
	clock := clocktesting.NewFakeClock(clockStart)
	mgr, err := New(Options{Config: cfg, REST: restCfg, Log: logr.Discard(), Clock: clock, Metrics: m, SkipNameValidation: true, LeaderIdentity: identity,
		KindRecheck: 200 * time.Millisecond}) // a CRD installed mid-test is watched within a poll
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{mgr: mgr, cancel: cancel, done: make(chan struct{}), clock: clock}
	go func() { s.err = mgr.Start(ctx); close(s.done) }()
	t.Cleanup(func() { s.cancel(); <-s.done })
	return s
}

var nsCount atomic.Int32

func namespace(t *testing.T, labels map[string]string, annotations map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("mgr-%d", nsCount.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return name
}

func podTemplate(name string) (*metav1.LabelSelector, corev1.PodTemplateSpec) {
	labels := map[string]string{"app": name}
	return &metav1.LabelSelector{MatchLabels: labels}, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
	}
}

func deployment(ns, name string, replicas int32, labels, annotations map[string]string) *appsv1.Deployment {
	sel, tmpl := podTemplate(name)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: sel, Template: tmpl},
	}
}

func statefulSet(ns, name string) *appsv1.StatefulSet {
	sel, tmpl := podTemplate(name)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: sel, Template: tmpl},
	}
}

func getMW(ns, name string) (*napwakev1alpha1.ManagedWorkload, error) {
	mw := &napwakev1alpha1.ManagedWorkload{}
	return mw, k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, mw)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestALabelledWorkloadGetsAManagedWorkloadWithItsSettings(t *testing.T) {
	start(t, testConfig(), metrics.New())
	ctx := context.Background()
	ns := namespace(t, nil, map[string]string{napwakev1alpha1.AnnotationIdleAfter: "2h", napwakev1alpha1.AnnotationWake: "ask"})
	must(t, k8s.Create(ctx, deployment(ns, "web", 1,
		map[string]string{napwakev1alpha1.LabelEnabled: "true"},
		map[string]string{napwakev1alpha1.AnnotationWake: "Request", napwakev1alpha1.AnnotationWakeMaxWait: "30s"})))
	must(t, k8s.Create(ctx, deployment(ns, "other", 1, nil, nil)))
	testenv.Eventually(t, "ManagedWorkload web", func() error {
		mw, err := getMW(ns, "web")
		if err != nil {
			return err
		}
		s := mw.Spec
		if s.TargetRef.Name != "web" || s.Wake.Mode != napwakev1alpha1.WakeAsk || s.IdleAfter.Duration != 2*time.Hour || s.Wake.MaxWait.Duration != 30*time.Second {
			return fmt.Errorf("spec %+v: want Ask (unreadable wake), 2h from the namespace, 30s", s)
		}
		if mw.Labels[napwakev1alpha1.LabelManagedBy] != napwakev1alpha1.ManagedByOperator || len(mw.OwnerReferences) != 1 || mw.OwnerReferences[0].Name != "web" {
			return fmt.Errorf("labels %v owners %v", mw.Labels, mw.OwnerReferences)
		}
		if mw.Status.Phase != napwakev1alpha1.PhaseRunning {
			return fmt.Errorf("phase %q", mw.Status.Phase)
		}
		return nil
	})
	testenv.Eventually(t, "an InvalidSetting event on the Deployment", func() error {
		return findEvent(ns, "web", napwakev1alpha1.EventInvalidSetting, napwakev1alpha1.AnnotationWake)
	})
	if _, err := getMW(ns, "other"); err == nil {
		t.Error("an unlabelled Deployment got a ManagedWorkload")
	}
}

func TestALabelledNamespaceOptsInItsWorkloadsButNotIgnoredOnes(t *testing.T) {
	start(t, testConfig(), metrics.New())
	ctx := context.Background()
	ns := namespace(t, map[string]string{napwakev1alpha1.LabelEnabled: "true"}, nil)
	must(t, k8s.Create(ctx, deployment(ns, "db", 1, nil, nil)))
	must(t, k8s.Create(ctx, statefulSet(ns, "db")))
	must(t, k8s.Create(ctx, deployment(ns, "skip", 1, map[string]string{napwakev1alpha1.LabelIgnore: "true"}, nil)))
	testenv.Eventually(t, "ManagedWorkloads db and db-statefulset", func() error {
		d, err := getMW(ns, "db")
		if err != nil {
			return err
		}
		s, err := getMW(ns, "db-statefulset")
		if err != nil {
			return err
		}
		if d.Spec.TargetRef.Kind != napwakev1alpha1.KindDeployment || s.Spec.TargetRef.Kind != napwakev1alpha1.KindStatefulSet {
			return fmt.Errorf("targets %v and %v", d.Spec.TargetRef, s.Spec.TargetRef)
		}
		return nil
	})
	if _, err := getMW(ns, "skip"); err == nil {
		t.Error("a Deployment labelled napwake.dev/ignore got a ManagedWorkload")
	}
}

func TestRemovingTheLabelStopsManagementAndWakesAPausedWorkload(t *testing.T) {
	s := start(t, testConfig(), metrics.New())
	ctx := context.Background()
	ns := namespace(t, nil, nil)
	must(t, k8s.Create(ctx, deployment(ns, "api", 2, map[string]string{napwakev1alpha1.LabelEnabled: "true"}, nil)))
	testenv.Eventually(t, "Running", func() error { return phaseIs(ns, "api", napwakev1alpha1.PhaseRunning) })

	// Pause it by the annotation on the workload itself, as a labelled one allows.
	d := &appsv1.Deployment{}
	must(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api"}, d))
	d.Annotations = map[string]string{napwakev1alpha1.AnnotationPauseRequested: s.clock.Now().Format(time.RFC3339)}
	must(t, k8s.Update(ctx, d))
	testenv.Eventually(t, "scaled to 0", func() error { return replicasAre(ns, "api", 0) })
	testenv.Eventually(t, "a Pausing event", func() error { return findEvent(ns, "api", napwakev1alpha1.EventPausing, "Requested") })
	// The Deployment controller's part: no pod left.
	must(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api"}, d))
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
	must(t, k8s.Status().Update(ctx, d))
	testenv.Eventually(t, "Paused", func() error { return phaseIs(ns, "api", napwakev1alpha1.PhasePaused) })

	must(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api"}, d))
	delete(d.Labels, napwakev1alpha1.LabelEnabled)
	must(t, k8s.Update(ctx, d))
	testenv.Eventually(t, "2 replicas back", func() error { return replicasAre(ns, "api", 2) })
	testenv.Eventually(t, "the ManagedWorkload gone", func() error {
		if _, err := getMW(ns, "api"); err == nil {
			return errors.New("still there")
		}
		return nil
	})
}

func TestTheManagerServesHealthAndMetricsAndElectsOneLeader(t *testing.T) {
	cfg := testConfig()
	cfg.LeaderElect = true
	cfg.MetricsBindAddress = testnet.FreeAddr(t)
	cfg.HealthProbeBindAddress = testnet.FreeAddr(t)
	first := start(t, cfg, nil) // registers into controller-runtime's registry, as main does
	select {
	case <-first.mgr.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("the only replica was not elected within 30s")
	}
	testenv.Eventually(t, "/healthz", func() error { return get("http://"+cfg.HealthProbeBindAddress+"/healthz", "ok") })
	testenv.Eventually(t, "/metrics", func() error {
		return get("http://"+cfg.MetricsBindAddress+"/metrics", `napwake_operator_workloads{phase="Running"}`)
	})
	testenv.Eventually(t, "napwake_build_info", func() error {
		return get("http://"+cfg.MetricsBindAddress+"/metrics", `napwake_build_info{commit=`)
	})
	// The leader serves a workload's own series once it runs.
	ns := namespace(t, nil, nil)
	must(t, k8s.Create(context.Background(), deployment(ns, "web", 1, map[string]string{napwakev1alpha1.LabelEnabled: "true"}, nil)))
	testenv.Eventually(t, "web's phase series", func() error {
		return get("http://"+cfg.MetricsBindAddress+"/metrics", `napwake_operator_workload_phase{name="web",namespace="`+ns+`",phase="Running"} 1`)
	})

	cfg2 := testConfig()
	cfg2.LeaderElect = true
	second := start(t, cfg2, metrics.New())
	select {
	case <-second.mgr.Elected():
		t.Fatal("a second replica was elected while the first leads")
	case <-time.After(3 * time.Second): // a few of the 2s retry periods
	}
	first.stop(t) // releases the Lease on the way out
	select {
	case <-second.mgr.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("the second replica did not take over within 30s")
	}
}

func get(url, want string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("%s: %d without %q", url, resp.StatusCode, want)
	}
	return nil
}

func phaseIs(ns, name string, p napwakev1alpha1.Phase) error {
	mw, err := getMW(ns, name)
	if err != nil {
		return err
	}
	if mw.Status.Phase != p {
		return fmt.Errorf("phase %q, want %q", mw.Status.Phase, p)
	}
	return nil
}

func replicasAre(ns, name string, n int32) error {
	d := &appsv1.Deployment{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		return err
	}
	if *d.Spec.Replicas != n {
		return fmt.Errorf("replicas %d, want %d", *d.Spec.Replicas, n)
	}
	return nil
}

// findEvent looks for an events.k8s.io Event about name with reason and a note containing text.
func findEvent(ns, name, reason, text string) error {
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason && strings.Contains(e.Note, text) {
			return nil
		}
	}
	return fmt.Errorf("no %s event about %s saying %q among %d", reason, name, text, len(list.Items))
}

// Activity queries go through the answer cache; with no --prometheus-url
// there is no client at all, not a nil pointer in an interface; an http
// config the round tripper cannot use stops the operator at start.
func TestActivityQueriesAreAnsweredThroughTheCache(t *testing.T) {
	clk := clocktesting.NewFakeClock(clockStart)
	if q, err := queries(config.Config{}, clk); q != nil || err != nil {
		t.Fatalf("queries without a URL = %#v, %v; want nil", q, err)
	}
	if q, err := queries(config.Config{PrometheusURL: "http://prometheus.monitoring:9090"}, clk); err != nil {
		t.Fatal(err)
	} else if c, ok := q.(*promquery.Cache); !ok || c == nil {
		t.Fatalf("queries = %T, want a *promquery.Cache", q)
	}
	file := filepath.Join(t.TempDir(), "http.yaml")
	if err := os.WriteFile(file, []byte("tls_config:\n  ca_file: missing-ca.crt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := queries(config.Config{PrometheusURL: "https://prometheus.monitoring:9090", PrometheusHTTPConfig: file}, clk)
	if err == nil || !strings.Contains(err.Error(), "--prometheus-http-config") || !strings.Contains(err.Error(), "missing-ca.crt") {
		t.Fatalf("error %v, want one naming --prometheus-http-config and the missing CA file", err)
	}
}

// TestALabelledWorkloadOfAGivenKindIsManagedThroughItsScale: with
// --target-kinds naming testenv's ScalableApp, a labelled ScalableApp gets
// a ManagedWorkload naming its apiVersion, which runs (its scale read
// through the watch the flag adds), while an unlabelled one gets none
// (docs/pause.md#other-kinds-of-workload). A listed kind the API server
// does not serve does not keep the operator from starting.
func TestALabelledWorkloadOfAGivenKindIsManagedThroughItsScale(t *testing.T) {
	must(t, testenv.InstallScalableCRDs(restCfg))
	gvk := testenv.ScalableAppGVK
	cfg := testConfig()
	// Ghost is not served: it is not watched, and the manager starts all the same.
	cfg.TargetKinds = "test.napwake.dev/v1/ScalableApp,test.napwake.dev/v1/Ghost"
	start(t, cfg, metrics.New())
	ctx := context.Background()
	ns := namespace(t, nil, nil)
	app := testenv.ScalableApp(gvk, ns, "web", 1, true)
	app.SetLabels(map[string]string{napwakev1alpha1.LabelEnabled: "true"})
	must(t, k8s.Create(ctx, app))
	must(t, k8s.Create(ctx, testenv.ScalableApp(gvk, ns, "other", 1, true)))
	// No controller has written its selector yet: refused, until the
	// watch --target-kinds adds brings the status write below (the sync
	// period, a minute, is beyond the wait).
	testenv.Eventually(t, "ManagedWorkload web, refused for its empty selector", func() error {
		mw, err := getMW(ns, "web")
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionTargetAvailable); c == nil || c.Reason != napwakev1alpha1.ReasonTargetNotScalable {
			return fmt.Errorf("TargetAvailable %+v", c)
		}
		return nil
	})
	for _, name := range []string{"web", "other"} {
		_, err := testenv.FollowScalableApp(ctx, k8s, gvk, ns, name)
		must(t, err)
	}
	testenv.Eventually(t, "ManagedWorkload web, Running", func() error {
		mw, err := getMW(ns, "web")
		if err != nil {
			return err
		}
		want := napwakev1alpha1.TargetRef{APIVersion: "test.napwake.dev/v1", Kind: "ScalableApp", Name: "web"}
		if mw.Spec.TargetRef != want || len(mw.OwnerReferences) != 1 || mw.OwnerReferences[0].Kind != "ScalableApp" {
			return fmt.Errorf("targetRef %+v owners %v; want %+v owned by the ScalableApp", mw.Spec.TargetRef, mw.OwnerReferences, want)
		}
		if mw.Status.Phase != napwakev1alpha1.PhaseRunning {
			return fmt.Errorf("phase %q conditions %+v", mw.Status.Phase, mw.Status.Conditions)
		}
		return nil
	})
	if _, err := getMW(ns, "other"); err == nil {
		t.Error("an unlabelled ScalableApp got a ManagedWorkload")
	}
}
