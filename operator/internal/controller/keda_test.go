package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
)

// These tests hold KEDA ScaledObjects against KEDA's own CRD
// (testdata/keda, from KEDA v2.17.0; see its README). KEDA's operator
// does not run: nothing acts on paused-replicas, so the tests check what
// Napwake writes, and play the user who edits it.

// replicasAtList is a Reader that notes the target's spec.replicas each
// time ScaledObjects are listed, so a test sees that a pause holds them
// before it scales to 0.
type replicasAtList struct {
	client.Reader
	dep types.NamespacedName
	mu  sync.Mutex
	at  []int32
}

func (r *replicasAtList) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, r.dep, d); err != nil {
		return err
	}
	r.mu.Lock()
	r.at = append(r.at, replicasOf(d.Spec.Replicas))
	r.mu.Unlock()
	return r.Reader.List(ctx, list, opts...)
}

func newMapper(t *testing.T) meta.RESTMapper {
	t.Helper()
	hc, err := rest.HTTPClientFor(restCfg)
	must(t, err)
	m, err := apiutil.NewDynamicRESTMapper(restCfg, hc)
	must(t, err)
	return m
}

// withKEDA turns --keda on for the fixture's reconciler.
func (f *fixture) withKEDA(m meta.RESTMapper) *replicasAtList {
	r := &replicasAtList{Reader: k8s, dep: f.dep}
	f.r.KEDA = &KEDA{Reader: r, Mapper: m, Clock: f.clock}
	return r
}

func (f *fixture) createScaledObject(name, target string, annotations map[string]string) types.NamespacedName {
	f.t.Helper()
	so := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"scaleTargetRef":  map[string]any{"name": target},
			"minReplicaCount": int64(0),
			"triggers":        []any{map[string]any{"type": "cron", "metadata": map[string]any{"timezone": "UTC", "start": "0 8 * * *", "end": "0 18 * * *", "desiredReplicas": "2"}}},
		},
	}}
	so.SetGroupVersionKind(ScaledObjectGVK)
	so.SetNamespace(f.ns)
	so.SetName(name)
	so.SetAnnotations(annotations)
	must(f.t, k8s.Create(f.ctx, so))
	return types.NamespacedName{Namespace: f.ns, Name: name}
}

func (f *fixture) scaledObject(key types.NamespacedName) *unstructured.Unstructured {
	f.t.Helper()
	so := &unstructured.Unstructured{}
	so.SetGroupVersionKind(ScaledObjectGVK)
	must(f.t, k8s.Get(f.ctx, key, so))
	return so
}

// wantAnnotations fails unless the ScaledObject's paused-replicas and
// Napwake's record are as given ("" for absent).
func (f *fixture) wantAnnotations(key types.NamespacedName, paused, record, why string) {
	f.t.Helper()
	a := f.scaledObject(key).GetAnnotations()
	if a[napwakev1alpha1.AnnotationKEDAPausedReplicas] != paused || a[napwakev1alpha1.AnnotationSetPausedReplicas] != record {
		f.t.Fatalf("ScaledObject %s annotations %v, want paused-replicas %q and record %q: %s", key.Name, a, paused, record, why)
	}
}

func (f *fixture) condition(typ string) *metav1.Condition {
	f.t.Helper()
	return meta.FindStatusCondition(f.managedWorkload().Status.Conditions, typ)
}

func (f *fixture) wantCondition(typ string, status metav1.ConditionStatus, reason, says string) {
	f.t.Helper()
	c := f.condition(typ)
	if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, says) {
		f.t.Fatalf("%s condition %+v, want %s %s saying %q", typ, c, status, reason, says)
	}
}

// wake asks a paused workload to wake and plays the Deployment
// controller until it runs.
func (f *fixture) wake() {
	f.t.Helper()
	f.clock.Step(time.Minute)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
	f.reconcile()
	f.followSpec()
	f.reconcile()
	f.wantPhase(napwakev1alpha1.PhaseRunning, "")
}

// TestScaledObjects runs in order: first without KEDA's CRD, then with it
// installed, as it stays for the rest of the package's tests.
func TestScaledObjects(t *testing.T) {
	absent := newMapper(t)
	var before *fixture
	t.Run("without KEDA's CRD a pause and a wake go on as ever", func(t *testing.T) {
		f := newFixture(t, 2)
		f.withKEDA(absent)
		f.runToRunning()
		f.pauseIt()
		f.wantReplicas(0, "paused")
		f.wantCondition(napwakev1alpha1.ConditionAutoscalers, metav1.ConditionTrue, napwakev1alpha1.ReasonNoAutoscalers, "not installed")
		f.wake()
		f.wantReplicas(2, "woken")
		before = f
	})
	if t.Failed() {
		return
	}
	_, err := envtest.InstallCRDs(restCfg, envtest.CRDInstallOptions{Paths: []string{"testdata/keda"}, ErrorIfPathMissing: true})
	must(t, err)

	t.Run("the answer that KEDA is absent is kept for a while, then asked again", func(t *testing.T) {
		k := before.r.KEDA
		if k.Installed() {
			t.Fatal("KEDA found installed within kedaRecheck of the answer that it is not")
		}
		before.clock.Step(kedaRecheck)
		if !k.Installed() {
			t.Fatal("KEDA not found installed once kedaRecheck passed")
		}
	})

	t.Run("a pause holds the ScaledObject at 0 before it scales, and a wake removes exactly that", func(t *testing.T) {
		f := newFixture(t, 2)
		at := f.withKEDA(newMapper(t))
		so := f.createScaledObject("api", "api", nil)
		other := f.createScaledObject("web", "web", nil)
		f.runToRunning()
		f.wantAnnotations(so, "", "", "running")

		f.clock.Step(11 * time.Minute)
		at.mu.Lock()
		at.at = nil
		at.mu.Unlock()
		f.reconcile()
		at.mu.Lock()
		first := fmt.Sprint(at.at)
		at.mu.Unlock()
		if !strings.HasPrefix(first, "[2") {
			t.Fatalf("target replicas at each ScaledObject look %s, want the first at 2: held before the scale to 0", first)
		}
		f.wantAnnotations(so, "0", "true", "pausing")
		f.wantAnnotations(other, "", "", "another workload's ScaledObject")
		f.followSpec()
		f.reconcile()
		f.wantPhase(napwakev1alpha1.PhasePaused, "")
		f.wantCondition(napwakev1alpha1.ConditionAutoscalers, metav1.ConditionTrue, napwakev1alpha1.ReasonAutoscalersPaused, "ScaledObject api holds")

		at.mu.Lock()
		at.at = nil
		at.mu.Unlock()
		f.wake()
		f.wantReplicas(2, "the count the pause saved")
		at.mu.Lock()
		first = fmt.Sprint(at.at)
		at.mu.Unlock()
		if !strings.HasPrefix(first, "[2") {
			t.Fatalf("target replicas at each ScaledObject look %s during the wake, want the first at 2: released only after the scale up", first)
		}
		a := f.scaledObject(so).GetAnnotations()
		if _, ok := a[napwakev1alpha1.AnnotationKEDAPausedReplicas]; ok {
			t.Fatalf("annotations %v after the wake, want paused-replicas gone", a)
		}
		if _, ok := a[napwakev1alpha1.AnnotationSetPausedReplicas]; ok {
			t.Fatalf("annotations %v after the wake, want the record gone", a)
		}
		f.wantCondition(napwakev1alpha1.ConditionAutoscalers, metav1.ConditionTrue, napwakev1alpha1.ReasonAutoscalersActive, "holds none")
	})

	t.Run("a paused-replicas changed or removed while paused is set back, and the saved count wins the wake", func(t *testing.T) {
		f := newFixture(t, 2)
		f.withKEDA(newMapper(t))
		so := f.createScaledObject("api", "api", nil)
		f.runToRunning()
		f.pauseIt()
		f.wantAnnotations(so, "0", "true", "paused")

		f.annotate(f.scaledObject(so), so, napwakev1alpha1.AnnotationKEDAPausedReplicas, "5")
		f.reconcile()
		f.wantAnnotations(so, "0", "true", "changed to 5 while paused")
		f.wantEvent(napwakev1alpha1.EventAutoscalerReset, "set back to 0")
		f.wantCondition(napwakev1alpha1.ConditionAutoscalers, metav1.ConditionTrue, napwakev1alpha1.ReasonAutoscalerReset, "set back to 0")

		u := f.scaledObject(so)
		a := u.GetAnnotations()
		delete(a, napwakev1alpha1.AnnotationKEDAPausedReplicas)
		u.SetAnnotations(a)
		must(t, k8s.Update(f.ctx, u))
		f.reconcile()
		f.wantAnnotations(so, "0", "true", "removed while paused")
		f.wantEvent(napwakev1alpha1.EventAutoscalerReset, "changed or removed")

		f.annotate(f.scaledObject(so), so, napwakev1alpha1.AnnotationKEDAPausedReplicas, "5")
		f.wake()
		f.wantReplicas(2, "the count the pause saved, not the 5 someone wrote")
		f.wantAnnotations(so, "", "", "woken")
	})

	t.Run("an owner's own paused-replicas is never touched nor removed", func(t *testing.T) {
		f := newFixture(t, 2)
		f.withKEDA(newMapper(t))
		zero := f.createScaledObject("owners-zero", "api", map[string]string{napwakev1alpha1.AnnotationKEDAPausedReplicas: "0"})
		two := f.createScaledObject("owners-two", "api", map[string]string{napwakev1alpha1.AnnotationKEDAPausedReplicas: "2"})
		f.runToRunning()
		f.pauseIt()
		f.wantAnnotations(zero, "0", "", "the owner's 0 while paused")
		f.wantAnnotations(two, "2", "", "the owner's 2 while paused")
		f.wantCondition(napwakev1alpha1.ConditionAutoscalers, metav1.ConditionFalse, napwakev1alpha1.ReasonAutoscalerNotPaused, `owners-two (its own paused-replicas "2")`)
		f.wake()
		f.wantAnnotations(zero, "0", "", "the owner's 0 after the wake")
		f.wantAnnotations(two, "2", "", "the owner's 2 after the wake")
	})

	t.Run("deleting a paused workload's ManagedWorkload releases its ScaledObject", func(t *testing.T) {
		f := newFixture(t, 2)
		f.withKEDA(newMapper(t))
		so := f.createScaledObject("api", "api", nil)
		f.runToRunning()
		f.pauseIt()
		f.wantAnnotations(so, "0", "true", "paused")
		must(t, k8s.Delete(f.ctx, f.managedWorkload()))
		f.reconcile()
		f.wantAnnotations(so, "", "", "the ManagedWorkload deleted")
	})
}

// blockingReader never answers: a cache whose informer cannot sync.
type blockingReader struct{ client.Reader }

func (blockingReader) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestAScaledObjectReadThatNeverAnswersDoesNotHoldTheReconcile: an
// operator run with --keda but without the RBAC to list ScaledObjects has a
// cache that never syncs them; the reconcile gives up on them after
// aroundReadTimeout, goes on, and asks to be called again soon.
func TestAScaledObjectReadThatNeverAnswersDoesNotHoldTheReconcile(t *testing.T) {
	defer func(d time.Duration) { aroundReadTimeout = d }(aroundReadTimeout)
	aroundReadTimeout = 100 * time.Millisecond
	f := newFixture(t, 2)
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(ScaledObjectGVK, meta.RESTScopeNamespace)
	f.r.KEDA = &KEDA{Reader: blockingReader{}, Mapper: m, Clock: f.clock}
	done := make(chan reconcile.Result, 1)
	go func() { done <- f.reconcile() }()
	select {
	case res := <-done:
		if res.RequeueAfter <= 0 || res.RequeueAfter > quiesceRetry {
			t.Errorf("requeue after %s, want at most %s", res.RequeueAfter, quiesceRetry)
		}
	case <-time.After(testenv.EventuallyTimeout):
		t.Fatal("the reconcile waits on a ScaledObject read that never answers")
	}
	f.wantPhase(napwakev1alpha1.PhaseRunning, "")
}
