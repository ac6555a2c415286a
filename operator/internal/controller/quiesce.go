package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/quiesce"
)

// This file is the shell around package quiesce: it reads the KEDA
// ScaledObjects of a target and the CronJobs of a namespace, writes what
// quiesce decides, and keeps the Autoscalers and CronJobs conditions for
// the next status write (docs/pause.md#scaledobjects-and-cronjobs).

// ScaledObjectGVK is KEDA's ScaledObject. Napwake reads it as unstructured
// data: it needs three annotations and spec.scaleTargetRef, not KEDA's Go
// module.
var ScaledObjectGVK = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}

// kedaRecheck is how long an answer to "is KEDA's CRD installed?" is kept:
// installing KEDA after the operator is rare, and asking the API server's
// discovery on every reconcile of every workload is not free.
const kedaRecheck = 5 * time.Minute

// aroundReadTimeout bounds a read of ScaledObjects or CronJobs: the
// cache's first read of a kind waits for its informer to sync, which never
// happens if the operator may not list it (a flag set by hand without the
// chart's RBAC rule); the reconcile must go on without it.
var aroundReadTimeout = 10 * time.Second

// quiesceRetry is how soon a reconcile whose ScaledObject or CronJob write
// failed looks again.
const quiesceRetry = 5 * time.Second

// KEDA finds the ScaledObjects that scale a target, while KEDA's CRD is
// installed; without it, it finds none and never errs.
type KEDA struct {
	// Reader lists ScaledObjects: the manager's cache, whose informer
	// starts on first use.
	Reader client.Reader
	// Mapper says whether the API server serves ScaledObjects.
	Mapper meta.RESTMapper
	// Clock times kedaRecheck.
	Clock clock.PassiveClock

	mu        sync.Mutex
	checkedAt time.Time
	installed bool
}

// Installed says whether the API server serves keda.sh/v1alpha1
// ScaledObjects, as last checked within kedaRecheck. An error other than
// "no such kind" (the API server away) is not kept: it is asked again.
func (k *KEDA) Installed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.Clock.Now()
	if !k.checkedAt.IsZero() && now.Sub(k.checkedAt) < kedaRecheck {
		return k.installed
	}
	_, err := k.Mapper.RESTMapping(ScaledObjectGVK.GroupKind(), ScaledObjectGVK.Version)
	if err != nil && !meta.IsNoMatchError(err) {
		return false
	}
	k.installed, k.checkedAt = err == nil, now
	return k.installed
}

// scaling lists the ScaledObjects in namespace whose scaleTargetRef names
// the target.
func (k *KEDA) scaling(ctx context.Context, namespace string, ref napwakev1alpha1.TargetRef) ([]unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, aroundReadTimeout)
	defer cancel()
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(ScaledObjectGVK.GroupVersion().WithKind(ScaledObjectGVK.Kind + "List"))
	if err := k.Reader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing ScaledObjects in %s: %w", namespace, err)
	}
	var out []unstructured.Unstructured
	for _, so := range list.Items {
		if quiesce.ScalesTargetRef(scaleTargetRef(&so), ref) {
			out = append(out, so)
		}
	}
	return out, nil
}

func scaleTargetRef(so *unstructured.Unstructured) quiesce.ScaleTargetRef {
	s := func(field string) string {
		v, _, _ := unstructured.NestedString(so.Object, "spec", "scaleTargetRef", field)
		return v
	}
	return quiesce.ScaleTargetRef{APIVersion: s("apiVersion"), Kind: s("kind"), Name: s("name")}
}

// mapScaledObject enqueues the ManagedWorkloads of the target a
// ScaledObject scales, so an edit of its annotations while paused is put
// right at once.
func (r *ManagedWorkloadReconciler) mapScaledObject(ctx context.Context, o client.Object) []reconcile.Request {
	so, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	ref := scaleTargetRef(so)
	// KEDA's defaults: an empty apiVersion is apps/v1, an empty kind a Deployment.
	kind := ref.Kind
	if kind == "" {
		kind = string(napwakev1alpha1.KindDeployment)
	}
	return r.mapScaled(ctx, so.GetNamespace(), ref.APIVersion, kind, ref.Name)
}

// quietAutoscalers writes what quiesce decides on each ScaledObject of the
// target, the workload paused or not, once per reconcile and state, and
// keeps the Autoscalers condition for the next status write. A failed
// write never holds up the pause or the wake: it is tried again soon.
func (r *ManagedWorkloadReconciler) quietAutoscalers(ctx context.Context, s *reconcileScope, paused bool) {
	k := r.KEDA
	if k == nil || (s.autoscalers != nil && s.autoscalersPaused == paused) {
		return
	}
	s.autoscalersPaused = paused
	if !k.Installed() {
		s.autoscalers = &quiesce.Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonNoAutoscalers,
			Message: "KEDA's ScaledObject CRD is not installed"}
		return
	}
	sos, err := k.scaling(ctx, s.mw.Namespace, s.mw.Spec.TargetRef)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Finding the ScaledObjects of the target")
		s.autoscalers = nil
		s.keepSoonest(quiesceRetry)
		return
	}
	seen := make([]quiesce.Named[quiesce.ScaledObjectResult], 0, len(sos))
	for i := range sos {
		so := &sos[i]
		res := quiesce.ScaledObject(paused, so.GetAnnotations())
		n := quiesce.Named[quiesce.ScaledObjectResult]{Name: so.GetName(), Result: res}
		if err := r.writeAround(ctx, so, res.Action); err != nil {
			n.Failed = failure(err)
			ctrl.LoggerFrom(ctx).Error(err, "Writing a ScaledObject", "scaledObject", klog.KObj(so))
			s.keepSoonest(quiesceRetry)
		} else if res.Reset {
			r.Recorder.Eventf(s.mw, so, corev1.EventTypeWarning, napwakev1alpha1.EventAutoscalerReset, napwakev1alpha1.EventAutoscalerReset,
				"ScaledObject %s: its %s, set by Napwake, was changed or removed while paused; set back to 0", so.GetName(), napwakev1alpha1.AnnotationKEDAPausedReplicas)
		}
		seen = append(seen, n)
	}
	c := quiesce.AutoscalersCondition(paused, seen)
	s.autoscalers = &c
}

// quietCronJobs writes what quiesce decides on each CronJob of the
// workload's namespace, from the phases of its ManagedWorkloads (this
// one's as self says; nil for one being deleted, which counts no more),
// and keeps the CronJobs condition for the next
// status write. A namespace that is not opted in has no condition, and
// loses the CronJobs Napwake suspended while it was.
func (r *ManagedWorkloadReconciler) quietCronJobs(ctx context.Context, s *reconcileScope, self *napwakev1alpha1.Phase) {
	if !r.SuspendCronJobs {
		return
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: s.mw.Namespace}, ns); client.IgnoreNotFound(err) != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the namespace for its CronJobs")
		return
	}
	optedIn := ns.Labels[napwakev1alpha1.LabelEnabled] == "true"
	had := meta.FindStatusCondition(s.mw.Status.Conditions, napwakev1alpha1.ConditionCronJobs) != nil
	if !optedIn && !had {
		return
	}
	allPaused := false
	if optedIn {
		var err error
		if allPaused, err = r.namespacePaused(ctx, s, self); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the namespace's ManagedWorkloads for its CronJobs")
			return
		}
	}
	var cjs batchv1.CronJobList
	readCtx, cancel := context.WithTimeout(ctx, aroundReadTimeout)
	defer cancel()
	if err := r.Client.List(readCtx, &cjs, client.InNamespace(s.mw.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing CronJobs")
		s.keepSoonest(quiesceRetry)
		return
	}
	seen := make([]quiesce.Named[quiesce.CronJobResult], 0, len(cjs.Items))
	for i := range cjs.Items {
		cj := &cjs.Items[i]
		res := quiesce.CronJob(allPaused, quiesce.CronJobState{
			Suspend: cj.Spec.Suspend != nil && *cj.Spec.Suspend, Annotations: cj.Annotations, Labels: cj.Labels,
		})
		n := quiesce.Named[quiesce.CronJobResult]{Name: cj.Name, Result: res}
		if err := r.writeAround(ctx, cj, res.Action); err != nil {
			n.Failed = failure(err)
			ctrl.LoggerFrom(ctx).Error(err, "Writing a CronJob", "cronJob", klog.KObj(cj))
			s.keepSoonest(quiesceRetry)
		}
		seen = append(seen, n)
	}
	s.cronJobsOff = !optedIn
	c := quiesce.CronJobsCondition(allPaused, seen)
	s.cronJobs = &c
}

// namespacePaused says whether every ManagedWorkload of the namespace is
// paused, taking this one's phase as self says (its status may not be
// written yet) and the others' from the cache.
func (r *ManagedWorkloadReconciler) namespacePaused(ctx context.Context, s *reconcileScope, self *napwakev1alpha1.Phase) (bool, error) {
	var list napwakev1alpha1.ManagedWorkloadList
	if err := r.Client.List(ctx, &list, client.InNamespace(s.mw.Namespace)); err != nil {
		return false, err
	}
	var phases []napwakev1alpha1.Phase
	if self != nil {
		phases = append(phases, *self)
	}
	for i := range list.Items {
		if mw := &list.Items[i]; mw.Name != s.mw.Name && mw.DeletionTimestamp.IsZero() {
			phases = append(phases, mw.Status.Phase)
		}
	}
	return quiesce.AllPaused(phases), nil
}

// writeAround writes an Action on a ScaledObject or CronJob: one merge
// patch of its annotations (and spec.suspend), guarded by the
// resourceVersion it was decided from, so a change made meanwhile (a
// user's own annotation) is never overwritten: the write fails with a
// conflict and the next reconcile decides again.
func (r *ManagedWorkloadReconciler) writeAround(ctx context.Context, obj client.Object, a quiesce.Action) error {
	if a.Empty() {
		return nil
	}
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.GetResourceVersion(),
		"annotations":     a.AnnotationPatch(),
	}}
	if a.Suspend != nil {
		patch["spec"] = map[string]any{"suspend": *a.Suspend}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding the patch of %s: %w", klog.KObj(obj), err)
	}
	if err := r.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("patching %s: %w", klog.KObj(obj), err)
	}
	return nil
}

// failure is how a condition's message names a failed write.
func failure(err error) string {
	switch {
	case apierrors.IsConflict(err):
		return "changed meanwhile, trying again"
	case apierrors.IsForbidden(err):
		return "forbidden: see the chart's autoscalers.keda.enabled and cronJobs.suspend"
	}
	return err.Error()
}
