package controller

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/idlelevel"
)

// servePodMetrics makes the API server serve metrics.k8s.io/v1beta1 pods,
// as metrics-server does, through a CRD of the same group, version and
// resource: envtest has no aggregated APIs. PodMetrics objects carry their
// pod's labels, as metrics-server's do.
func servePodMetrics(t *testing.T, f *fixture) {
	t.Helper()
	ext := runtimeSchemeWithCRDs(t)
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "pods.metrics.k8s.io",
			Annotations: map[string]string{"api-approved.kubernetes.io": "unapproved, a test stand-in for metrics-server"},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "metrics.k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "pods", Singular: "podmetrics", Kind: "PodMetrics", ListKind: "PodMetricsList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1beta1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true),
				}},
			}},
		},
	}
	if err := ext.Create(f.ctx, crd); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	dc := discovery.NewDiscoveryClientForConfigOrDie(restCfg)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if res, err := dc.ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1"); err == nil && len(res.APIResources) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("metrics.k8s.io/v1beta1 not served after 30s")
		}
	}
}

func runtimeSchemeWithCRDs(t *testing.T) client.Client {
	t.Helper()
	s := scheme
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ptrTo[T any](v T) *T { return &v }

func podMetrics(ns, name, cpu string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
		"metadata":  map[string]any{"namespace": ns, "name": name, "labels": map[string]any{"app": "api"}},
		"timestamp": "2026-10-23T18:00:00Z", "window": "15s",
		"containers": []any{map[string]any{"name": "app", "usage": map[string]any{"cpu": cpu, "memory": "20Mi"}}},
	}}
	return u
}

// TestAWorkloadIsBusyOnlyAboveItsOwnIdleLevel drives the default signal
// through a real API server: a JVM-like pod idling at 30m (busy under the
// old fixed 20m bar) is kept up while its level is learned (MinHours), then
// pauses when left alone at that level.
func TestAWorkloadIsBusyOnlyAboveItsOwnIdleLevel(t *testing.T) {
	f := newFixture(t, 2)
	servePodMetrics(t, f)
	usage := &MetricsAPIUsage{Reader: k8s, Discovery: discovery.NewDiscoveryClientForConfigOrDie(restCfg), Clock: f.clock}
	f.r.Usage = usage
	if !usage.Available(f.ctx) {
		t.Fatal("metrics.k8s.io is served but not seen")
	}
	idle := podMetrics(f.ns, "api-1", "30m")
	must(t, k8s.Create(f.ctx, idle))
	f.runToRunning()
	c := meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionActivitySignals)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != napwakev1alpha1.ReasonSignalsConfigured {
		t.Fatalf("ActivitySignals %+v, want True SignalsConfigured", c)
	}

	// Quiet for longer than quietFor: the first sample, not yet trusted,
	// so the pod's 30m counts as use and keeps the workload up.
	f.clock.Step(3 * time.Minute)
	f.reconcile()
	u := f.managedWorkload().Status.Usage
	if u == nil || u.IdleMilliCPU != 0 || u.BusyAboveMilliCPU != 2 || len(u.HourlyLows) != 1 || u.HourlyLows[0] != 30 {
		t.Fatalf("status.usage %+v, want hourly lows [30], not trusted yet (level 0, busy from 2m)", u)
	}
	learnHours(f, idlelevel.MinHours-1)
	u = f.managedWorkload().Status.Usage
	if u.IdleMilliCPU != 30 || u.BusyAboveMilliCPU != 45 || len(u.HourlyLows) != idlelevel.MinHours {
		t.Fatalf("status.usage %+v after %d hours, want idle level 30m, busy from 45m", u, idlelevel.MinHours)
	}

	// At its own idle level it is idle: it pauses idleAfter after it was
	// last seen above it.
	f.clock.Step(11 * time.Minute)
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePausing {
		t.Fatalf("phase %q with only a pod at its idle level, want Pausing", p)
	}
}

// learnHours reconciles once an hour for n hours: until the level is
// trusted the pods' use counts as activity, so the workload stays Running,
// and each hour's sample is learned.
func learnHours(f *fixture, n int) {
	f.t.Helper()
	for range n {
		f.clock.Step(time.Hour)
		f.reconcile()
		if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhaseRunning || mw.Status.LastActivitySource != napwakev1alpha1.SourceUsage {
			f.t.Fatalf("phase %q source %q while the idle level is being learned, want Running kept by usage", mw.Status.Phase, mw.Status.LastActivitySource)
		}
	}
}

// TestAPodAboveTheIdleLevelKeepsItsWorkloadRunning: one pod clearly above
// the learned level is activity, and once it is gone the workload pauses.
func TestAPodAboveTheIdleLevelKeepsItsWorkloadRunning(t *testing.T) {
	f := newFixture(t, 2)
	servePodMetrics(t, f)
	f.r.Usage = &MetricsAPIUsage{Reader: k8s, Discovery: discovery.NewDiscoveryClientForConfigOrDie(restCfg), Clock: f.clock}
	quiet := podMetrics(f.ns, "api-1", "3m")
	must(t, k8s.Create(f.ctx, quiet))
	f.runToRunning()
	f.clock.Step(3 * time.Minute)
	f.reconcile()
	learnHours(f, idlelevel.MinHours-1)
	if u := f.managedWorkload().Status.Usage; u == nil || u.IdleMilliCPU != 3 || u.BusyAboveMilliCPU != 5 {
		t.Fatalf("status.usage %+v, want idle level 3m, busy from 5m", u)
	}
	busy := podMetrics(f.ns, "api-2", "5m")
	must(t, k8s.Create(f.ctx, busy))
	f.clock.Step(11 * time.Minute)
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhaseRunning || mw.Status.LastActivitySource != napwakev1alpha1.SourceUsage {
		t.Fatalf("phase %q source %q, want Running kept by usage", mw.Status.Phase, mw.Status.LastActivitySource)
	}
	if u := mw.Status.Usage; u.IdleMilliCPU != 3 {
		t.Fatalf("a busy sample moved the idle level to %dm, want 3m", u.IdleMilliCPU)
	}
	must(t, k8s.Delete(f.ctx, busy))
	f.clock.Step(11 * time.Minute)
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePausing {
		t.Fatalf("phase %q once only a quiet pod is left, want Pausing", p)
	}
}

// An idle pod's sub-millicore usage (metrics-server reports nanocores) is
// rounded down: 0.05m is 0m, or every idle workload would look busy.
func TestPeakCPUIsRoundedDownToWholeMillicores(t *testing.T) {
	f := newFixture(t, 2)
	servePodMetrics(t, f)
	usage := &MetricsAPIUsage{Reader: k8s, Discovery: discovery.NewDiscoveryClientForConfigOrDie(restCfg), Clock: f.clock}
	must(t, k8s.Create(f.ctx, podMetrics(f.ns, "api-1", "50000n")))
	must(t, k8s.Create(f.ctx, podMetrics(f.ns, "api-2", "999999n")))
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}
	if milli, pods, err := usage.PeakMilliCPU(f.ctx, f.ns, sel); err != nil || milli != 0 || pods != 2 {
		t.Fatalf("PeakMilliCPU = %d over %d pods, %v; want 0m over 2 (0.05m and 0.999999m)", milli, pods, err)
	}
	must(t, k8s.Create(f.ctx, podMetrics(f.ns, "api-3", "1500000n")))
	if milli, _, err := usage.PeakMilliCPU(f.ctx, f.ns, sel); err != nil || milli != 1 {
		t.Fatalf("PeakMilliCPU = %d, %v; want 1m (1.5m rounded down)", milli, err)
	}
}
