package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// wantStatus fails unless mw has the phase and the Router's doorman routes
// and WakeOnRequest reason, beside the reconciler's own two conditions.
func wantStatus(t *testing.T, mw *napwakev1alpha1.ManagedWorkload, phase napwakev1alpha1.Phase, routes int, wakeOnRequest string) {
	t.Helper()
	if mw.Status.Phase != phase {
		t.Errorf("phase %q, want %q", mw.Status.Phase, phase)
	}
	got := 0
	if mw.Status.Doorman != nil {
		got = len(mw.Status.Doorman.Routes)
	}
	if got != routes || (routes > 0 && mw.Status.Doorman.Routes[0].DoormanPort != routerRoute.DoormanPort) {
		t.Errorf("doorman %+v, want %d of the router's routes", mw.Status.Doorman, routes)
	}
	if c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest); c == nil || c.Reason != wakeOnRequest {
		t.Errorf("WakeOnRequest %+v, want the router's %s", c, wakeOnRequest)
	}
	for _, typ := range []string{napwakev1alpha1.ConditionTargetAvailable, napwakev1alpha1.ConditionActivitySignals} {
		if c := meta.FindStatusCondition(mw.Status.Conditions, typ); c == nil || c.ObservedGeneration != mw.Generation {
			t.Errorf("%s %+v, want it for generation %d", typ, c, mw.Generation)
		}
	}
}

// The Router writes status.doorman and WakeOnRequest in the same reconcile
// as the reconciler writes the pause: one after the other, each from what
// the other wrote, so neither write conflicts with or undoes the other; and
// a cache that has not seen the Router's write is not decided from.
func TestTheRoutersStatusWritesStandBesideTheReconcilers(t *testing.T) {
	f := newFixture(t, 3)
	f.router.writes = true
	f.runToRunning()
	f.clock.Step(11 * time.Minute)
	if res := f.reconcile(); res.RequeueAfter == conflictRetry {
		t.Fatalf("Reconcile = %+v: a conflict between the reconciler's and the router's writes", res)
	}
	wantStatus(t, f.managedWorkload(), napwakev1alpha1.PhasePausing, 1, napwakev1alpha1.ReasonDoormanRouted)
	if got := replicasOf(f.deployment().Spec.Replicas); got != 0 {
		t.Fatalf("replicas %d, want 0", got)
	}

	// The cache still holds the pause as the reconciler wrote it, without
	// the Router's write after it.
	routes := f.router.routes
	f.r.Client = &laggingCache{Client: k8s, old: f.router.before}
	if res := f.reconcile(); res.RequeueAfter != staleCacheRecheck || f.router.routes != routes {
		t.Fatalf("Reconcile = %+v, routes %d; want a requeue after %v without routing", res, f.router.routes-routes, staleCacheRecheck)
	}
	f.r.Client = k8s

	f.followSpec()
	f.reconcile()
	wantStatus(t, f.managedWorkload(), napwakev1alpha1.PhasePaused, 1, napwakev1alpha1.ReasonDoormanRouted)

	f.clock.Step(time.Minute)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
	f.reconcile()
	f.followSpec()
	if res := f.reconcile(); res.RequeueAfter == conflictRetry {
		t.Fatalf("Reconcile = %+v: a conflict between the Unroute's and Running's writes", res)
	}
	wantStatus(t, f.managedWorkload(), napwakev1alpha1.PhaseRunning, 0, napwakev1alpha1.ReasonNotPaused)
	if c := meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionTargetAvailable); c.Status != metav1.ConditionTrue {
		t.Errorf("TargetAvailable %+v, want True", c)
	}
}
