package routing

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/forwarder"
)

// The forwarders controller, on only with the forwarder: it follows the
// forwarder Deployments this operator runs, and their pods. While their
// workload is paused, a change (a pod becoming Ready, failing, or
// beginning to terminate) re-routes it, so the slices and the condition
// follow at once; otherwise the forwarder is marked to go Linger later,
// and deleted once that time has passed.

func eventFor(o client.Object) event.GenericEvent { return event.GenericEvent{Object: o} }

func (r *Router) setupForwarders(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named("napwake-forwarders").
		Watches(&appsv1.Deployment{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			d, ok := o.(*appsv1.Deployment)
			return ok && r.isOurForwarder(d)
		}))).
		// The pods themselves, not only the Deployment's status: a pod
		// leaves the slices as soon as it terminates, whatever the
		// Deployment's controllers do meanwhile.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.forwarderOfPod), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			l := o.GetLabels()
			return l[napwakev1alpha1.LabelAppName] == napwakev1alpha1.AppNameForwarder && l[napwakev1alpha1.LabelOperator] == r.doorman.Namespace &&
				l[napwakev1alpha1.LabelWorkload] != ""
		}))).
		WatchesRawSource(source.Channel(r.reap, &handler.EnqueueRequestForObject{})).
		Complete(reconcile.Func(r.reconcileForwarder))
	if err != nil {
		return fmt.Errorf("setting up the NEG forwarders controller: %w", err)
	}
	return nil
}

// forwarderOfPod maps a forwarder pod to its Deployment.
func (r *Router) forwarderOfPod(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: forwarder.Name(o.GetLabels()[napwakev1alpha1.LabelWorkload])}}}
}

func (r *Router) reconcileForwarder(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var dep appsv1.Deployment
	if err := r.c.Get(ctx, req.NamespacedName, &dep); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !r.isOurForwarder(&dep) || dep.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	if at, ok := dep.Annotations[forwarder.AnnotationDeleteAfter]; ok {
		now := r.clock.Now()
		if t, err := time.Parse(time.RFC3339, at); err == nil && t.After(now) {
			return reconcile.Result{RequeueAfter: t.Sub(now)}, nil
		}
		// Read again past the cache: a pause since may have taken the mark off.
		var fresh appsv1.Deployment
		if err := r.reader.Get(ctx, req.NamespacedName, &fresh); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		t, err := time.Parse(time.RFC3339, fresh.Annotations[forwarder.AnnotationDeleteAfter])
		if err != nil || t.After(now) {
			return reconcile.Result{}, nil
		}
		if err := r.c.Delete(ctx, &fresh, client.Preconditions{UID: &fresh.UID, ResourceVersion: &fresh.ResourceVersion}); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		return reconcile.Result{}, nil
	}
	// The workload's phase read past the cache: a stale Running at the
	// start of a pause must not mark the new forwarder.
	var mw napwakev1alpha1.ManagedWorkload
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: dep.Namespace, Name: dep.Labels[napwakev1alpha1.LabelWorkload]}, &mw)
	switch {
	case err == nil && routing(&mw) && metav1.IsControlledBy(&dep, &mw):
		select {
		case r.kick <- eventFor(&mw):
		case <-ctx.Done():
		}
		return reconcile.Result{}, nil
	case err != nil && client.IgnoreNotFound(err) != nil:
		return reconcile.Result{}, fmt.Errorf("getting the forwarder's ManagedWorkload: %w", err)
	}
	return reconcile.Result{}, r.retireForwarder(ctx, dep.Namespace, dep.Name)
}
