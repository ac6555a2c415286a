// Package restore lets go of the workloads Napwake paused, without the
// operator: each is scaled back to the replicas its pause saved, given a
// bounded time to have a Ready pod, and Napwake's EndpointSlices are removed
// so every Service leads to its own pods again. The chart's pre-delete hook
// (`operator restore`) and `kubectl napwake restore` run it
// (docs/uninstall.md).
//
// The order is the one a wake keeps (docs/design/pause-wake.md): replicas first,
// routes last, so no Service is left pointing nowhere while pods start; a
// crash or a second run at any step finds the pause record still there and
// does the rest.
package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	napwakescale "napwake.dev/shared/scale"
)

// Options says where to restore and how long to wait.
type Options struct {
	// Namespace is the one namespace to restore; "" is every namespace.
	Namespace string
	// ReadyTimeout bounds the wait for a Ready pod of every restored
	// workload (all at once), and the wait for the operator to stop.
	ReadyTimeout time.Duration
	// Poll is how often the waits look again; 0 is one second.
	Poll time.Duration
	// StopOperator, when set, is the operator's Deployment: it is scaled to
	// zero first and its pods waited for, so nothing pauses again behind
	// the restore.
	StopOperator *types.NamespacedName
	// Progress gets one line per step; nil says nothing.
	Progress io.Writer
}

// Outcome is what was done for one ManagedWorkload.
type Outcome struct {
	ManagedWorkload types.NamespacedName
	// Target is "Deployment/api".
	Target string
	// ref is the target, read again while waiting for its pods.
	ref napwakev1alpha1.TargetRef
	// Paused says a pause was in force: paused, pausing or waking.
	Paused bool
	// From and To are the replicas before and after; equal when the
	// workload was not paused.
	From, To int32
	// Ready is how many pods were Ready when the wait ended.
	Ready int32
	// Slices is how many of Napwake's EndpointSlices for it were removed.
	Slices int
	// Err is what went wrong; the workload may still be paused.
	Err error
}

// Scaled says whether the workload was scaled back.
func (o Outcome) Scaled() bool { return o.To > o.From }

// Waiting says a paused workload was scaled back but had no Ready pod in
// time: its pods are on their way, not lost, but its callers are refused
// until one is Ready.
func (o Outcome) Waiting() bool { return o.Paused && o.Err == nil && o.To > 0 && o.Ready == 0 }

// Report is what a run did.
type Report struct {
	Outcomes []Outcome
	// Strays counts removed Napwake EndpointSlices of no ManagedWorkload.
	Strays int
	// Forwarders counts removed NEG forwarder Deployments.
	Forwarders int
	// ScaledObjects and CronJobs count the KEDA ScaledObjects released and
	// the CronJobs resumed: those Napwake's record says it held.
	ScaledObjects, CronJobs int
}

// Err names every workload that could not be restored, and how to finish.
func (r Report) Err() error {
	var errs []error
	for _, o := range r.Outcomes {
		if o.Err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", o.ManagedWorkload, o.Target, o.Err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d workloads were not restored; fix the cause and run `kubectl napwake restore -A` again (it does only what is left):\n%w",
		len(errs), len(r.Outcomes), errors.Join(errs...))
}

// Run restores every paused or pausing workload in o.Namespace. The error is
// for a step that stopped the whole run (the API server did not answer);
// what failed for one workload is in its Outcome and Report.Err.
func Run(ctx context.Context, c client.Client, o Options) (Report, error) {
	say := func(format string, args ...any) {
		if o.Progress != nil {
			_, _ = fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.StopOperator != nil {
		if err := stopOperator(ctx, c, *o.StopOperator, o, say); err != nil {
			return Report{}, err
		}
	}
	var list napwakev1alpha1.ManagedWorkloadList
	if err := c.List(ctx, &list, client.InNamespace(o.Namespace)); err != nil {
		return Report{}, fmt.Errorf("listing ManagedWorkloads: %w; nothing was restored: once the API server answers, run `kubectl napwake restore -A`", err)
	}
	where := "every namespace"
	if o.Namespace != "" {
		where = "namespace " + o.Namespace
	}
	r := Report{Outcomes: make([]Outcome, len(list.Items))}
	paused := 0
	var err error
	for i := range list.Items {
		mw := &list.Items[i]
		r.Outcomes[i] = scaleBack(ctx, c, mw)
		if r.Outcomes[i].Scaled() {
			paused++
		}
	}
	say("%d ManagedWorkloads in %s; %d paused or pausing, scaled back to the replicas their pause saved", len(list.Items), where, paused)
	for _, out := range r.Outcomes {
		switch {
		case out.Err != nil:
			say("  %s: %v", out.ManagedWorkload, out.Err)
		case out.Scaled():
			say("  %s: %s %d → %d replicas", out.ManagedWorkload, out.Target, out.From, out.To)
		}
	}
	// Scaled back first, then released: a ScaledObject still held at 0
	// would otherwise be free to scale the workload down again, as a wake
	// does it (docs/pause.md#scaledobjects-and-cronjobs).
	if r.ScaledObjects, r.CronJobs, err = releaseAround(ctx, c, o.Namespace); err != nil {
		return r, err
	}
	if r.ScaledObjects+r.CronJobs > 0 {
		say("Released %d KEDA ScaledObjects and resumed %d CronJobs that Napwake held", r.ScaledObjects, r.CronJobs)
	}
	waitReady(ctx, c, &r, o, say)
	if err := removeSlices(ctx, c, o.Namespace, &r); err != nil {
		return r, err
	}
	removed := r.Strays
	for _, out := range r.Outcomes {
		removed += out.Slices
	}
	say("Removed %d EndpointSlices that led to the doorman", removed)
	if r.Forwarders, err = removeForwarders(ctx, c, o.Namespace); err != nil {
		return r, err
	}
	if r.Forwarders > 0 {
		say("Removed %d NEG forwarder Deployments", r.Forwarders)
	}
	for i := range list.Items {
		if r.Outcomes[i].Err != nil {
			continue // its finalizer stays: the operator, or a second run, still has work there
		}
		note, err := letGo(ctx, c, &list.Items[i], time.Now())
		if err != nil {
			r.Outcomes[i].Err = err
		}
		if note != "" {
			say("  %s: %s", r.Outcomes[i].ManagedWorkload, note)
		}
	}
	for _, out := range r.Outcomes {
		if out.Waiting() {
			say("  %s: scaled to %d, no pod Ready yet after %s (kubectl get pods -n %s)", out.ManagedWorkload, out.To, o.ReadyTimeout, out.ManagedWorkload.Namespace)
		}
	}
	return r, nil
}

// stopOperator scales the operator to zero and waits for its pods to go.
func stopOperator(ctx context.Context, c client.Client, key types.NamespacedName, o Options, say func(string, ...any)) error {
	start := time.Now()
	var d appsv1.Deployment
	if err := c.Get(ctx, key, &d); err != nil {
		if apierrors.IsNotFound(err) {
			say("The operator %s is not there; nothing to stop", key)
			return nil
		}
		return fmt.Errorf("reading the operator's Deployment %s: %w; nothing was restored: once the API server answers, run `kubectl napwake restore -A`", key, err)
	}
	say("Stopping the operator %s, so that it pauses nothing again", key)
	if err := setReplicas(ctx, c, &d, 0); err != nil {
		return fmt.Errorf("scaling the operator %s to 0: %w", key, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("the operator's selector: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, o.Poll, o.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, nil //nolint:nilerr // looked at again until the timeout
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		say("The operator's pods were still there after %s; restoring anyway", o.ReadyTimeout)
		return nil
	}
	say("The operator stopped in %s", time.Since(start).Round(time.Second))
	return nil
}

// targetObject is an empty object of the kind ref names: typed for apps/v1
// Deployments and StatefulSets, unstructured of ref's GVK for any other
// kind, which is scaled back through its scale subresource as well.
func targetObject(ref napwakev1alpha1.TargetRef) (client.Object, error) {
	if ref.IsApps() {
		if ref.Kind == napwakev1alpha1.KindStatefulSet {
			return &appsv1.StatefulSet{}, nil
		}
		return &appsv1.Deployment{}, nil
	}
	gvk, err := ref.GroupVersionKind()
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// scaleBack scales mw's target to what its pause saved, if it is below.
func scaleBack(ctx context.Context, c client.Client, mw *napwakev1alpha1.ManagedWorkload) Outcome {
	ref := mw.Spec.TargetRef
	out := Outcome{ManagedWorkload: client.ObjectKeyFromObject(mw), Target: ref.String(), ref: ref}
	obj, err := targetObject(ref)
	if err != nil {
		out.Err = err
		return out
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: mw.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return out // gone: nothing to restore, its slices still go
		}
		if meta.IsNoMatchError(err) {
			// Never taken for gone: its finalizer would go, and a paused
			// workload of a kind this client cannot map stay at zero.
			out.Err = fmt.Errorf("reading it: the API server serves no kind %s (is its CRD installed?): %w", ref.QualifiedKind(), err)
			return out
		}
		out.Err = fmt.Errorf("reading it: %w", err)
		return out
	}
	scale, err := napwakescale.Get(ctx, c, obj)
	if err != nil {
		out.Err = fmt.Errorf("reading its scale: %w", err)
		return out
	}
	out.From, out.To = scale.Spec.Replicas, scale.Spec.Replicas
	out.Paused = mw.Status.Pause != nil && mw.Status.Phase != napwakev1alpha1.PhaseRunning && mw.Status.Phase != ""
	want, needed := napwakev1alpha1.RestoreReplicas(mw.Status.Phase, mw.Status.Pause, scale.Spec.Replicas)
	if !needed {
		return out
	}
	if err := setReplicas(ctx, c, obj, want); err != nil {
		out.Err = fmt.Errorf("scaling it to its saved %d replicas: %w", want, err)
		return out
	}
	out.To = want
	return out
}

// setReplicas writes replicas through obj's scale subresource, reading it
// again on a conflict.
func setReplicas(ctx context.Context, c client.Client, obj client.Object, replicas int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := napwakescale.Get(ctx, c, obj)
		if err != nil {
			return err
		}
		scale.Spec.Replicas = replicas
		return napwakescale.Update(ctx, c, obj, scale)
	})
}

// waitReady waits, up to o.ReadyTimeout for all of them at once, for a
// Ready pod of every workload scaled back, and records what it saw.
func waitReady(ctx context.Context, c client.Client, r *Report, o Options, say func(string, ...any)) {
	pending := func() []int {
		var idx []int
		for i, out := range r.Outcomes {
			if out.Waiting() {
				idx = append(idx, i)
			}
		}
		return idx
	}
	if len(pending()) == 0 {
		return
	}
	start := time.Now()
	say("Waiting up to %s for a Ready pod of each (%d to go)", o.ReadyTimeout, len(pending()))
	_ = wait.PollUntilContextTimeout(ctx, o.Poll, o.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		for _, i := range pending() {
			out := &r.Outcomes[i]
			mw := out.ManagedWorkload
			obj, err := targetObject(out.ref)
			if err != nil {
				continue
			}
			if err := c.Get(ctx, types.NamespacedName{Namespace: mw.Namespace, Name: out.ref.Name}, obj); err != nil {
				continue
			}
			out.Ready = readyReplicas(ctx, c, obj)
			if out.Ready > 0 {
				say("  %s: %d Ready after %s", mw, out.Ready, time.Since(start).Round(time.Second))
			}
		}
		return len(pending()) == 0, nil
	})
}

// readyReplicas is status.readyReplicas of a Deployment or StatefulSet;
// for another kind, the Ready pods matching its scale's status.selector,
// as the operator counts them (docs/pause.md#other-kinds-of-workload).
func readyReplicas(ctx context.Context, c client.Client, obj client.Object) int32 {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Status.ReadyReplicas
	case *appsv1.StatefulSet:
		return o.Status.ReadyReplicas
	}
	scale, err := napwakescale.Get(ctx, c, obj)
	if err != nil || scale.Status.Selector == "" {
		return 0
	}
	sel, err := labels.Parse(scale.Status.Selector)
	if err != nil {
		return 0
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return 0
	}
	var n int32
	for i := range pods.Items {
		for _, cond := range pods.Items[i].Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && pods.Items[i].DeletionTimestamp == nil {
				n++
			}
		}
	}
	return n
}

// removeSlices deletes every EndpointSlice Napwake wrote in namespace ("" is
// all), the doorman's and the NEG forwarders', counting them per workload.
func removeSlices(ctx context.Context, c client.Client, namespace string, r *Report) error {
	var list discoveryv1.EndpointSliceList
	if err := c.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager}); err != nil {
		return fmt.Errorf("listing Napwake's EndpointSlices: %w; the workloads above are scaled back, but Services may still lead to the doorman: run `kubectl napwake restore -A` again", err)
	}
	var errs []error
	for i := range list.Items {
		s := &list.Items[i]
		if err := c.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("removing EndpointSlice %s/%s: %w", s.Namespace, s.Name, err))
			continue
		}
		at := slices.IndexFunc(r.Outcomes, func(o Outcome) bool {
			return o.ManagedWorkload.Namespace == s.Namespace && o.ManagedWorkload.Name == s.Labels[napwakev1alpha1.LabelWorkload]
		})
		if at < 0 {
			r.Strays++
			continue
		}
		r.Outcomes[at].Slices++
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w; run `kubectl napwake restore -A` again", errors.Join(errs...))
	}
	return nil
}

// ScaledObjectGVK is KEDA's ScaledObject, read without KEDA's Go types.
var ScaledObjectGVK = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}

// releaseAround undoes what Napwake recorded on the objects around paused
// workloads: on a ScaledObject marked AnnotationSetPausedReplicas it
// removes that record and KEDA's paused-replicas; on a CronJob marked
// AnnotationSuspended it resumes it and removes the record. An owner's own
// paused-replicas or suspension has no record and is never touched. Where
// KEDA is not installed, or the operator never had the right to hold these
// (its --keda and --suspend-cronjobs off), there is nothing Napwake held.
func releaseAround(ctx context.Context, c client.Client, namespace string) (scaledObjects, cronJobs int, err error) {
	absent := func(err error) bool {
		return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || apierrors.IsForbidden(err)
	}
	var sos unstructured.UnstructuredList
	sos.SetGroupVersionKind(ScaledObjectGVK.GroupVersion().WithKind(ScaledObjectGVK.Kind + "List"))
	if err := c.List(ctx, &sos, client.InNamespace(namespace)); err != nil && !absent(err) {
		return 0, 0, fmt.Errorf("listing KEDA ScaledObjects: %w; run `kubectl napwake restore -A` again", err)
	}
	release := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:null}}}`,
		napwakev1alpha1.AnnotationKEDAPausedReplicas, napwakev1alpha1.AnnotationSetPausedReplicas)))
	for i := range sos.Items {
		so := &sos.Items[i]
		if so.GetAnnotations()[napwakev1alpha1.AnnotationSetPausedReplicas] != "true" {
			continue
		}
		if err := c.Patch(ctx, so, release); client.IgnoreNotFound(err) != nil {
			return scaledObjects, cronJobs, fmt.Errorf("releasing ScaledObject %s/%s (it holds its target at 0): %w", so.GetNamespace(), so.GetName(), err)
		}
		scaledObjects++
	}
	var cjs batchv1.CronJobList
	if err := c.List(ctx, &cjs, client.InNamespace(namespace)); err != nil && !absent(err) {
		return scaledObjects, 0, fmt.Errorf("listing CronJobs: %w; run `kubectl napwake restore -A` again", err)
	}
	resume := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}},"spec":{"suspend":false}}`,
		napwakev1alpha1.AnnotationSuspended)))
	for i := range cjs.Items {
		cj := &cjs.Items[i]
		if cj.Annotations[napwakev1alpha1.AnnotationSuspended] != "true" {
			continue
		}
		if err := c.Patch(ctx, cj, resume); client.IgnoreNotFound(err) != nil {
			return scaledObjects, cronJobs, fmt.Errorf("resuming CronJob %s/%s: %w", cj.Namespace, cj.Name, err)
		}
		cronJobs++
	}
	return scaledObjects, cronJobs, nil
}

// removeForwarders deletes the napwake-forwarder-<workload> Deployments
// the operator ran for paused workloads behind GKE NEGs: once the slices
// that led to them are gone they serve nothing, and no operator is left to
// reap them.
func removeForwarders(ctx context.Context, c client.Client, namespace string) (int, error) {
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{napwakev1alpha1.LabelAppName: napwakev1alpha1.AppNameForwarder}); err != nil {
		return 0, fmt.Errorf("listing NEG forwarder Deployments: %w; run `kubectl napwake restore -A` again", err)
	}
	n := 0
	for i := range list.Items {
		if err := c.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return n, fmt.Errorf("removing NEG forwarder %s/%s: %w; run `kubectl napwake restore -A` again", list.Items[i].Namespace, list.Items[i].Name, err)
		}
		n++
	}
	return n, nil
}

// letGo makes the ManagedWorkload say what is now true, Running with no
// pause in force and resumed now, so that a later install neither finishes a
// pause nobody is waiting for nor repeats an old pause request; then removes
// Napwake's finalizer: its work (replicas back, routes gone) is done, and
// with no operator left it would hold the ManagedWorkload, and its
// namespace, from being deleted. A new operator adds it again. The status
// is the operator's to write (an admission policy refuses anyone else while
// Napwake is installed): a refusal is said in note and is not a failure,
// since a new operator also reads a paused workload found scaled up as woken.
func letGo(ctx context.Context, c client.Client, mw *napwakev1alpha1.ManagedWorkload, now time.Time) (note string, err error) {
	if mw.Status.Pause != nil || (mw.Status.Phase != napwakev1alpha1.PhaseRunning && mw.Status.Phase != "") {
		was := mw.Status.Phase
		patch := client.MergeFrom(mw.DeepCopy())
		mw.Status.Phase = napwakev1alpha1.PhaseRunning
		mw.Status.Pause = nil
		mw.Status.PauseAt = nil
		resumed := metav1.NewTime(now)
		mw.Status.ResumedAt = &resumed
		if err := c.Status().Patch(ctx, mw, patch); client.IgnoreNotFound(err) != nil {
			note = fmt.Sprintf("scaled back, but its status still says %s: %v", was, err)
		}
	}
	if !controllerutil.ContainsFinalizer(mw, napwakev1alpha1.Finalizer) {
		return note, nil
	}
	patch := client.MergeFrom(mw.DeepCopy())
	controllerutil.RemoveFinalizer(mw, napwakev1alpha1.Finalizer)
	if err := c.Patch(ctx, mw, patch); client.IgnoreNotFound(err) != nil {
		return note, fmt.Errorf("removing finalizer %s: %w", napwakev1alpha1.Finalizer, err)
	}
	return note, nil
}
