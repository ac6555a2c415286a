package routing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing/epslice"
	"napwake.dev/operator/internal/workload"
)

// SetupWithManager adds the router's controllers: one re-routes a
// namespace's paused workloads when a Service or an Ingress there changes
// (and every paused workload at start), the other follows the Ready doorman
// pods.
func (r *Router) SetupWithManager(mgr ctrl.Manager) error {
	if mgr == nil {
		return errors.New("routing: SetupWithManager needs a manager")
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("napwake-routing").
		For(&napwakev1alpha1.ManagedWorkload{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false }, // the pause/wake reconciler routes on its own changes
			DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.pausedInNamespace)).
		Watches(&networkingv1.Ingress{}, handler.EnqueueRequestsFromMapFunc(r.pausedInNamespace)).
		WatchesRawSource(source.Channel(r.kick, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}). // Route locks per workload; the allocator has its own mutex
		Complete(reconcile.Func(r.reconcileWorkload))
	if err != nil {
		return fmt.Errorf("setting up the routing controller: %w", err)
	}
	if r.opts.DoormanService == "" {
		return nil
	}
	if r.forwarderOn() {
		if err := r.setupForwarders(mgr); err != nil {
			return err
		}
	}
	doormanKey := reconcile.Request{NamespacedName: r.doorman}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("napwake-doorman-pods").
		Watches(&discoveryv1.EndpointSlice{},
			handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{doormanKey} }),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetNamespace() == r.doorman.Namespace && o.GetLabels()[napwakev1alpha1.LabelServiceName] == r.doorman.Name
			}))).
		Complete(reconcile.Func(r.reconcileDoormen))
	if err != nil {
		return fmt.Errorf("setting up the doorman pods controller: %w", err)
	}
	return nil
}

func routing(mw *napwakev1alpha1.ManagedWorkload) bool {
	return mw.DeletionTimestamp == nil && (mw.Status.Phase == napwakev1alpha1.PhasePausing || mw.Status.Phase == napwakev1alpha1.PhasePaused)
}

func (r *Router) pausedInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list napwakev1alpha1.ManagedWorkloadList
	if err := r.c.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "Listing ManagedWorkloads to re-route", "namespace", o.GetNamespace())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if routing(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// reconcileWorkload re-routes one paused workload.
func (r *Router) reconcileWorkload(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var mw napwakev1alpha1.ManagedWorkload
	if err := r.c.Get(ctx, req.NamespacedName, &mw); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !routing(&mw) {
		return reconcile.Result{}, nil
	}
	tmpl, err := r.template(ctx, &mw)
	if err != nil {
		return reconcile.Result{}, err
	}
	after, err := r.Route(ctx, &mw, tmpl)
	if err != nil {
		log.FromContext(ctx).Error(err, "Routing", "managedWorkload", req.NamespacedName)
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// template returns the target's pod template, nil when the target is gone.
func (r *Router) template(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) (*corev1.PodTemplateSpec, error) {
	key := client.ObjectKey{Namespace: mw.Namespace, Name: mw.Spec.TargetRef.Name}
	if ref := mw.Spec.TargetRef; !ref.IsApps() {
		// Routed only once the reconciler paused it, so its kind is one
		// the operator is given: read as it was then.
		gvk, err := ref.GroupVersionKind()
		if err != nil {
			return nil, nil
		}
		t, found, err := workload.Get(ctx, r.c, []schema.GroupVersionKind{gvk}, mw.Namespace, ref)
		if !found || err != nil {
			var ns *workload.NotScalableError
			if errors.As(err, &ns) {
				err = nil
			}
			return nil, err
		}
		return t.Template, nil
	}
	var err error
	switch mw.Spec.TargetRef.Kind {
	case napwakev1alpha1.KindStatefulSet:
		var s appsv1.StatefulSet
		if err = r.c.Get(ctx, key, &s); err == nil {
			return &s.Spec.Template, nil
		}
	default:
		var d appsv1.Deployment
		if err = r.c.Get(ctx, key, &d); err == nil {
			return &d.Spec.Template, nil
		}
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return nil, fmt.Errorf("getting %s %s: %w", mw.Spec.TargetRef.Kind, key, err)
}

// reconcileDoormen follows the Ready doorman pods: when they change, every
// routed slice's endpoints are rewritten at once; when none is left, or one
// comes back, every routed workload is re-routed (DoormanUnavailable, and
// back).
func (r *Router) reconcileDoormen(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	doormen, err := r.doormen(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	r.doormenMu.Lock()
	prev, hadPrev, settling := r.applied, r.appliedOK, r.settling
	r.doormenMu.Unlock()
	if hadPrev && equality.Semantic.DeepEqual(prev, doormen) {
		if !settling {
			return reconcile.Result{}, nil
		}
		// The second look after a change: a slice a route wrote with the
		// old set while the change was applied (the cache did not hold it
		// yet, so MoveAll did not see it) is moved now.
		if len(doormen) > 0 {
			if err := r.MoveAll(ctx, doormen); err != nil {
				return reconcile.Result{}, err
			}
		}
		r.doormenMu.Lock()
		r.settling = false
		r.doormenMu.Unlock()
		return reconcile.Result{}, nil
	}
	if len(doormen) > 0 {
		if err := r.MoveAll(ctx, doormen); err != nil {
			return reconcile.Result{}, err
		}
	}
	switch {
	case hadPrev && (len(prev) == 0) != (len(doormen) == 0):
		// None left, or one back: every routed workload's routing changes.
		if err := r.kickRouted(ctx, func(*napwakev1alpha1.ManagedWorkload) bool { return true }); err != nil {
			return reconcile.Result{}, err
		}
	case !hadPrev && len(doormen) > 0:
		// The first look since start: those found without a doorman
		// before are routed now.
		if err := r.kickRouted(ctx, func(mw *napwakev1alpha1.ManagedWorkload) bool {
			c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest)
			return c != nil && c.Reason == napwakev1alpha1.ReasonDoormanUnavailable
		}); err != nil {
			return reconcile.Result{}, err
		}
	}
	r.doormenMu.Lock()
	r.applied, r.appliedOK, r.settling = doormen, true, true
	r.doormenMu.Unlock()
	return reconcile.Result{RequeueAfter: settleAfter}, nil
}

// settleAfter is when the doormen controller looks again after applying a
// change: long enough for the cache to hold a slice written just before
// the change, short beside a pod's termination grace.
const settleAfter = 2 * time.Second

// kickRouted re-routes every pausing or paused workload (of those opts
// list) that want accepts, through the routing controller.
func (r *Router) kickRouted(ctx context.Context, want func(*napwakev1alpha1.ManagedWorkload) bool, opts ...client.ListOption) error {
	var list napwakev1alpha1.ManagedWorkloadList
	if err := r.c.List(ctx, &list, opts...); err != nil {
		return fmt.Errorf("listing ManagedWorkloads to re-route: %w", err)
	}
	for i := range list.Items {
		mw := &list.Items[i]
		if !routing(mw) || !want(mw) {
			continue
		}
		select {
		case r.kick <- event.GenericEvent{Object: mw}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// MoveAll rewrites the endpoints of every slice the operator wrote to the
// given doorman addresses, Concurrency at a time, touching nothing else.
func (r *Router) MoveAll(ctx context.Context, doormen []epslice.Doorman) error {
	start := time.Now()
	var list discoveryv1.EndpointSliceList
	if err := r.c.List(ctx, &list, client.MatchingLabels{napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager}); err != nil {
		return fmt.Errorf("listing routed EndpointSlices: %w", err)
	}
	var todo []*discoveryv1.EndpointSlice
	for i := range list.Items {
		s := &list.Items[i]
		if s.Labels[napwakev1alpha1.LabelForwarded] == "true" {
			continue // leads to a forwarder, which finds the doorman by DNS
		}
		if !equality.Semantic.DeepEqual(s.Endpoints, epslice.Endpoints(doormen, napwakev1alpha1.IPFamily(s.AddressType))) {
			todo = append(todo, s)
		}
	}
	admitted, deaf := r.joining(ctx, todo, doormen)
	moves := make([]move, 0, len(todo))
	for i, s := range todo {
		if !equality.Semantic.DeepEqual(s.Endpoints, epslice.Endpoints(admitted[i], napwakev1alpha1.IPFamily(s.AddressType))) {
			moves = append(moves, move{s, admitted[i]})
		}
	}
	err := forEach(ctx, r.opts.Concurrency, moves, func(ctx context.Context, m move) error {
		err := r.moveOne(ctx, m.slice, m.doormen)
		result := "ok"
		if err != nil {
			result = "error"
		}
		r.opts.Metrics.RouteMoves.WithLabelValues(result).Inc()
		return err
	})
	r.opts.Metrics.RouteMoveSeconds.Observe(time.Since(start).Seconds())
	if len(deaf) > 0 {
		// Retried by the caller: the pod joins once it listens.
		err = errors.Join(err, fmt.Errorf("%w: %s", errDoormanNotListening, strings.Join(deaf, ", ")))
	}
	if err != nil {
		return fmt.Errorf("moving routes to the Ready doorman pods: %w", err)
	}
	if len(moves) > 0 {
		log.FromContext(ctx).Info("Moved routes to the Ready doorman pods", "slices", len(moves), "doormen", len(doormen), "took", time.Since(start))
	}
	return nil
}

// errDoormanNotListening: a Ready doorman pod new to a slice does not
// accept on its ports yet, and is left out of it.
var errDoormanNotListening = errors.New("doorman pods not listening on the ports of routed slices yet, left out of them")

// move is one slice's new doormen.
type move struct {
	slice   *discoveryv1.EndpointSlice
	doormen []epslice.Doorman
}

func (r *Router) moveOne(ctx context.Context, s *discoveryv1.EndpointSlice, doormen []epslice.Doorman) error {
	s = s.DeepCopy()
	for attempt := 0; ; attempt++ {
		s.Endpoints = epslice.Endpoints(doormen, napwakev1alpha1.IPFamily(s.AddressType))
		err := r.c.Update(ctx, s)
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 3 {
			return fmt.Errorf("updating EndpointSlice %s/%s: %w", s.Namespace, s.Name, err)
		}
		fresh := &discoveryv1.EndpointSlice{}
		if err := r.reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		if fresh.Labels[napwakev1alpha1.LabelEndpointSliceManagedBy] != napwakev1alpha1.EndpointSliceManager {
			return nil
		}
		s = fresh
	}
}
