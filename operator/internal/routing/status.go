package routing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing/plan"
	"napwake.dev/operator/internal/routing/ports"
)

// Status writes: status.doorman and the WakeOnRequest condition, persisted
// before any slice leads callers to a port, and the backoff and one-event
// warnings that follow a failed write.

// patchStatus persists routes, holds (expired ones dropped, released ones
// added) and the WakeOnRequest condition, updating mw in place, and once
// they are written has the allocator release the ports routes no longer
// name. A conflict is retried on a fresh copy, which then replaces mw.
func (r *Router) patchStatus(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, routes []napwakev1alpha1.Route, released []ports.Hold, cond plan.Condition) error {
	err := r.writeStatus(ctx, mw, routes, released, cond)
	if err == nil {
		r.settle(mw, routes, released)
	}
	return err
}

func (r *Router) writeStatus(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, routes []napwakev1alpha1.Route, released []ports.Hold, cond plan.Condition) error {
	now := r.clock.Now()
	if len(cond.Message) > maxMessage {
		cond.Message = cond.Message[:maxMessage-3] + "..."
	}
	for attempt := 0; ; attempt++ {
		base := mw.DeepCopy()
		ds := &napwakev1alpha1.DoormanStatus{Routes: routes, Forwarded: slices.ContainsFunc(routes, func(rt napwakev1alpha1.Route) bool { return rt.Forwarded })}
		holds := map[int32]time.Time{}
		for _, h := range append(holdsOf(mw), released...) {
			if h.Until.After(now) && h.Until.After(holds[h.Port]) {
				holds[h.Port] = h.Until
			}
		}
		for p, u := range holds {
			ds.PortHolds = append(ds.PortHolds, napwakev1alpha1.PortHold{Port: p, Until: metav1.NewTime(u)})
		}
		// Latest first, so the status keeps the holds that matter longest.
		sort.Slice(ds.PortHolds, func(i, j int) bool {
			if !ds.PortHolds[i].Until.Equal(&ds.PortHolds[j].Until) {
				return ds.PortHolds[j].Until.Before(&ds.PortHolds[i].Until)
			}
			return ds.PortHolds[i].Port < ds.PortHolds[j].Port
		})
		if len(ds.PortHolds) > maxRoutes {
			ds.PortHolds = ds.PortHolds[:maxRoutes]
		}
		if len(ds.Routes) == 0 && len(ds.PortHolds) == 0 {
			ds = nil
		}
		mw.Status.Doorman = ds
		meta.SetStatusCondition(&mw.Status.Conditions, metav1.Condition{
			Type: napwakev1alpha1.ConditionWakeOnRequest, Status: cond.Status, Reason: cond.Reason, Message: cond.Message,
			ObservedGeneration: mw.Generation,
		})
		if equality.Semantic.DeepEqual(base.Status, mw.Status) {
			return nil
		}
		err := r.c.Status().Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err):
			*mw = *base
			return nil
		case !apierrors.IsConflict(err) || attempt >= 3:
			*mw = *base
			return fmt.Errorf("patching ManagedWorkload %s status: %w", klogKey(mw), err)
		case len(newPorts(routes, routesOf(base))) > 0:
			// New ports are claimed at base's resourceVersion: a write
			// at any other could follow the claim's takeover (claims.go).
			*mw = *base
			return fmt.Errorf("patching ManagedWorkload %s status: %w: %w", klogKey(mw), errStaleClaim, err)
		}
		fresh := &napwakev1alpha1.ManagedWorkload{}
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(mw), fresh); err != nil {
			*mw = *base
			return fmt.Errorf("getting ManagedWorkload %s after a conflict: %w", klogKey(mw), err)
		}
		*mw = *fresh
	}
}

// fail records a failed routing step: RoutingFailed, a warning event, and
// a retry with backoff from RetryMin to RetryMax. The routes stay, so their
// ports do.
func (r *Router) fail(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, routes []napwakev1alpha1.Route, err error) (time.Duration, error) {
	r.recorder.Eventf(mw, nil, corev1.EventTypeWarning, napwakev1alpha1.EventRoutingFailed, napwakev1alpha1.EventRoutingFailed, "%s", err.Error())
	cond := plan.Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonRoutingFailed, Message: err.Error()}
	if perr := r.patchStatus(ctx, mw, routes, nil, cond); perr != nil {
		err = errors.Join(err, perr)
	}
	return r.backoff(client.ObjectKeyFromObject(mw)), err
}

func (r *Router) backoff(key types.NamespacedName) time.Duration {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	r.failures[key]++
	d := r.opts.RetryMin
	for i := 1; i < r.failures[key] && d < r.opts.RetryMax; i++ {
		d *= 2
	}
	return min(d, r.opts.RetryMax)
}

// warnOnce raises a warning event once per pause of the workload.
func (r *Router) warnOnce(mw *napwakev1alpha1.ManagedWorkload, reason, msg string) {
	var pause time.Time
	if mw.Status.Pause != nil {
		pause = mw.Status.Pause.StartedAt.Time
	}
	key := client.ObjectKeyFromObject(mw)
	r.stateMu.Lock()
	if r.warned[key] == nil {
		r.warned[key] = map[string]time.Time{}
	}
	last, seen := r.warned[key][reason]
	r.warned[key][reason] = pause
	r.stateMu.Unlock()
	if !seen || !last.Equal(pause) {
		r.recorder.Eventf(mw, nil, corev1.EventTypeWarning, reason, reason, "%s", msg)
	}
}
