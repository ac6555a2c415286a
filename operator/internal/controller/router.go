package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Router puts a pausing workload's Services in front of the doorman and takes them away again.
//
// Status: the Router owns status.doorman and the WakeOnRequest condition, and writes nothing else. It writes them
// with a Status().Patch guarded by resourceVersion and updates mw in place, ResourceVersion included, so the
// reconciler's next status patch in the same reconcile is made from what the Router wrote (see status.go).
type Router interface {
	// Route is decide's Route step, at most once a reconcile: while Pausing, after status.pause is persisted and
	// BEFORE the target is scaled to 0, and on later reconciles while Pausing or Paused, to keep routes current.
	// It works routes out afresh, may persist status.doorman and the WakeOnRequest condition, and writes
	// EndpointSlices. An error never holds up the scale to 0: the reconciler logs it and scales
	// anyway, and requeues after the returned delay (the Router's backoff after a failure), when Route runs again.
	Route(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, tmpl *corev1.PodTemplateSpec) (requeueAfter time.Duration, err error)
	// Unroute is decide's Unroute step, once a woken workload has a Ready pod and before Running is persisted;
	// and it is called when routing must go (target deleted). It deletes the slices, moves ports into
	// status.doorman.portHolds and sets WakeOnRequest=False NotPaused (with the carry-over). Never holds up the
	// wake either.
	Unroute(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) (requeueAfter time.Duration, err error)
	// Finalize is called while a ManagedWorkload is being deleted, after its target's replicas are restored;
	// it returns done=false while port holds or slices remain.
	Finalize(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) (done bool, requeueAfter time.Duration, err error)
	// SetupWithManager lets the router add its own watches/controllers (doorman pods, Services, Ingresses).
	SetupWithManager(mgr ctrl.Manager) error
}

// NoopRouter is used when routing is disabled; it routes nothing.
type NoopRouter struct{}

var _ Router = NoopRouter{}

// Route routes nothing.
func (NoopRouter) Route(context.Context, *napwakev1alpha1.ManagedWorkload, *corev1.PodTemplateSpec) (time.Duration, error) {
	return 0, nil
}

// Unroute has nothing to take away.
func (NoopRouter) Unroute(context.Context, *napwakev1alpha1.ManagedWorkload) (time.Duration, error) {
	return 0, nil
}

// Finalize is done at once: a NoopRouter holds no ports and writes no slices.
func (NoopRouter) Finalize(context.Context, *napwakev1alpha1.ManagedWorkload) (bool, time.Duration, error) {
	return true, 0, nil
}

// SetupWithManager adds nothing.
func (NoopRouter) SetupWithManager(ctrl.Manager) error { return nil }
