package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/operator/internal/workload"
)

// finalizeRecheck is how soon a deletion looks again when the Router is not
// done and names no time: its slices may take a moment to go.
const finalizeRecheck = 5 * time.Second

// targetMissing sets TargetAvailable=False TargetNotFound and takes routes
// away: no Service should lead to the doorman for a workload that is gone.
// When the target comes back its watch brings the ManagedWorkload here
// again; a paused one found scaled up wakes as "scaled", one still at zero
// stays paused. The Router writes first (Unroute), then this status patch
// is made from what it wrote.
func (r *ManagedWorkloadReconciler) targetMissing(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) (reconcile.Result, error) {
	if c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionTargetAvailable); c != nil && c.Status == metav1.ConditionFalse {
		return reconcile.Result{}, nil
	}
	if _, err := r.Router.Unroute(ctx, mw); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Taking routes away from a workload that is gone")
	}
	msg := fmt.Sprintf("%s %s does not exist", mw.Spec.TargetRef.QualifiedKind(), mw.Spec.TargetRef.Name)
	if err := r.targetUnavailable(ctx, mw, napwakev1alpha1.ReasonTargetNotFound, msg); err != nil {
		return requeueOnConflict(err)
	}
	return reconcile.Result{}, nil
}

// targetNotScalable sets TargetAvailable=False TargetNotScalable with why,
// and emits the event once per message. Nothing is routed or scaled: the
// target's replicas are left as they are. It is looked at again at every
// sync period, as a granted RBAC rule or an installed CRD changes nothing
// a watch sees.
func (r *ManagedWorkloadReconciler) targetNotScalable(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, why string) (reconcile.Result, error) {
	again := reconcile.Result{RequeueAfter: r.SyncPeriod}
	msg := fmt.Sprintf("%s %s cannot be paused: %s", mw.Spec.TargetRef.QualifiedKind(), mw.Spec.TargetRef.Name, why)
	if c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionTargetAvailable); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == napwakev1alpha1.ReasonTargetNotScalable && c.Message == msg {
		return again, nil
	}
	if err := r.targetUnavailable(ctx, mw, napwakev1alpha1.ReasonTargetNotScalable, msg); err != nil {
		return requeueOnConflict(err)
	}
	return again, nil
}

// targetUnavailable writes TargetAvailable=False with reason and msg, and
// emits the warning event of the same name (the TargetNotFound and
// TargetNotScalable events are named as their reasons). A failed write is
// returned for requeueOnConflict, and no event is emitted.
func (r *ManagedWorkloadReconciler) targetUnavailable(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, reason, msg string) error {
	base := mw.DeepCopy()
	setCondition(&mw.Status.Conditions, mw.Generation, metav1.NewTime(r.Clock.Now()), napwakev1alpha1.ConditionTargetAvailable,
		decide.Condition{Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	mw.Status.ObservedGeneration = mw.Generation
	if err := r.Client.Status().Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching the status of %s: %w", klog.KObj(mw), err)
	}
	r.Recorder.Eventf(mw, nil, corev1.EventTypeWarning, reason, reason, "%s", msg)
	return nil
}

// finalize restores a paused target's replicas, lets the router clean up,
// then lets the ManagedWorkload go.
func (r *ManagedWorkloadReconciler) finalize(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(mw, napwakev1alpha1.Finalizer) {
		return reconcile.Result{}, nil
	}
	t, found, err := getTarget(ctx, r.Client, r.TargetKinds, mw.Namespace, mw.Spec.TargetRef)
	if ns := (*workload.NotScalableError)(nil); errors.As(err, &ns) {
		// Nothing was ever scaled that could be scaled back.
		found, err = false, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if found {
		n, err := liveReplicas(ctx, r.Client, &t)
		if err != nil {
			return reconcile.Result{}, err
		}
		t.replicas = n
		if want, needed := decide.Restore(stateOf(mw), t.observed()); needed {
			if _, err := scaleTo(ctx, r.Client, &t, want); err != nil {
				return requeueOnConflict(err)
			}
			r.Recorder.Eventf(mw, nil, corev1.EventTypeNormal, napwakev1alpha1.EventWaking, napwakev1alpha1.EventWaking,
				"Waking, the ManagedWorkload is being deleted: restoring %d replicas", want)
			r.Metrics.RecordWake(metrics.WokenByDeletion, metrics.PauseOf(mw), want, 0)
		}
	}
	// A workload being deleted releases its ScaledObjects, and counts no
	// more among its namespace's: its CronJobs follow the others.
	gone := &reconcileScope{mw: mw}
	r.quietAutoscalers(ctx, gone, false)
	r.quietCronJobs(ctx, gone, nil)
	done, after, err := r.Router.Finalize(ctx, mw)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Finalizing routes")
	}
	if !done {
		if after <= 0 {
			after = finalizeRecheck
		}
		return reconcile.Result{RequeueAfter: after}, nil
	}
	patch := client.MergeFromWithOptions(mw.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(mw, napwakev1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, mw, patch); err != nil {
		return requeueOnConflict(client.IgnoreNotFound(err))
	}
	return reconcile.Result{}, nil
}
