package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/workload"
	napwakescale "napwake.dev/shared/scale"
)

// target is a Deployment, StatefulSet or other kind with a scale
// subresource (package workload) seen through what Napwake needs.
type target struct {
	obj         client.Object
	replicas    int32 // spec.replicas as read with obj (maybe from the cache)
	statusReps  int32
	readyReps   int32
	selector    *metav1.LabelSelector
	template    *corev1.PodTemplateSpec
	annotations map[string]string
	// templateNote says the template was made up from the scale's
	// selector (workload.NoTemplate); "" when it was read.
	templateNote string
	// scale is the scale subresource as last read live, for one scaleTo.
	scale *autoscalingv1.Scale
}

// newTargetObject returns an empty object of the kind ref names.
func newTargetObject(kind napwakev1alpha1.TargetKind) (client.Object, error) {
	switch kind {
	case napwakev1alpha1.KindDeployment:
		return &appsv1.Deployment{}, nil
	case napwakev1alpha1.KindStatefulSet:
		return &appsv1.StatefulSet{}, nil
	}
	return nil, fmt.Errorf("unknown target kind %q", kind)
}

// getTarget reads the target; found is false when it does not exist. A
// kind other than apps/v1 Deployment and StatefulSet is read by package
// workload, among kinds (--target-kinds); one Napwake cannot pause is a
// *workload.NotScalableError saying why.
func getTarget(ctx context.Context, c client.Client, kinds []schema.GroupVersionKind, namespace string, ref napwakev1alpha1.TargetRef) (t target, found bool, err error) {
	if !ref.IsApps() {
		w, found, err := workload.Get(ctx, c, kinds, namespace, ref)
		if err != nil || !found {
			return target{}, found, err
		}
		return target{
			obj: w.Obj, annotations: w.Obj.GetAnnotations(),
			replicas: w.Scale.Spec.Replicas, statusReps: w.Scale.Status.Replicas, readyReps: w.ReadyReplicas,
			selector: w.Selector, template: w.Template, templateNote: w.TemplateNote,
		}, true, nil
	}
	obj, err := newTargetObject(ref.Kind)
	if err != nil {
		return target{}, false, err
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return target{}, false, nil
		}
		return target{}, false, fmt.Errorf("getting %s %s/%s: %w", ref.Kind, namespace, ref.Name, err)
	}
	t = target{obj: obj, annotations: obj.GetAnnotations()}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		t.replicas, t.statusReps, t.readyReps = replicasOf(o.Spec.Replicas), o.Status.Replicas, o.Status.ReadyReplicas
		t.selector, t.template = o.Spec.Selector, &o.Spec.Template
	case *appsv1.StatefulSet:
		t.replicas, t.statusReps, t.readyReps = replicasOf(o.Spec.Replicas), o.Status.Replicas, o.Status.ReadyReplicas
		t.selector, t.template = o.Spec.Selector, &o.Spec.Template
	}
	return t, true, nil
}

// replicasOf reads spec.replicas, which defaults to 1 when unset.
func replicasOf(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func (t target) observed() decide.Target {
	return decide.Target{Found: true, Replicas: t.replicas, StatusReplicas: t.statusReps, ReadyReplicas: t.readyReps}
}

// podsLeft says whether any pod matching the target's selector still exists,
// terminating ones included, read live (not from a cache) and as metadata only.
func podsLeft(ctx context.Context, r client.Reader, namespace string, t target) (bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(t.selector)
	if err != nil {
		return false, fmt.Errorf("reading the selector of %s: %w", client.ObjectKeyFromObject(t.obj), err)
	}
	if sel.Empty() || sel.String() == labels.Nothing().String() {
		return false, nil
	}
	var pods metav1.PartialObjectMetadataList
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}, client.Limit(1)); err != nil {
		return false, fmt.Errorf("listing pods of %s: %w", client.ObjectKeyFromObject(t.obj), err)
	}
	return len(pods.Items) > 0, nil
}

// scaleTo sets the target's replicas through the scale subresource. Every
// write carries the resourceVersion of what it was decided from, so a
// concurrent edit of the workload makes it fail with a conflict instead of
// being overwritten. A pause reads the scale live first (unless t.scale
// holds one read in this reconcile); a wake first writes from the target as
// read with the reconcile, saving the read on the held caller's path, and
// reads live only when that write conflicts. A conflict of the live write
// is retried by the caller's requeue. It returns the replicas the target
// had before.
func scaleTo(ctx context.Context, c client.Client, t *target, replicas int32) (before int32, err error) {
	scale := t.scale
	t.scale = nil // used once: after this write its resourceVersion is old
	if scale == nil && replicas > 0 {
		// A wake first writes from what was read with the target: the
		// scale subresource shares the workload's resourceVersion, so
		// the write is refused with a conflict unless the workload is
		// still as read, and is then made from a live read.
		before, err = writeScale(ctx, c, t, cachedScale(t), replicas)
		if !apierrors.IsConflict(err) {
			return before, err
		}
	}
	if scale == nil {
		if _, err := liveReplicas(ctx, c, t); err != nil {
			return 0, err
		}
		scale, t.scale = t.scale, nil
	}
	return writeScale(ctx, c, t, scale, replicas)
}

// writeScale writes replicas into scale, as read, unless that would scale
// down a wake: a wake never scales down what someone scaled up further.
func writeScale(ctx context.Context, c client.Client, t *target, scale *autoscalingv1.Scale, replicas int32) (before int32, err error) {
	before = scale.Spec.Replicas
	if before == replicas || (replicas > 0 && before > replicas) {
		return before, nil
	}
	scale.Spec.Replicas = replicas
	if err := napwakescale.Update(ctx, c, t.obj, scale); err != nil {
		return before, fmt.Errorf("scaling %s to %d: %w", client.ObjectKeyFromObject(t.obj), replicas, err)
	}
	return before, nil
}

// cachedScale is the target's scale as read with it (maybe from the
// cache), with the target's resourceVersion as the write's precondition.
func cachedScale(t *target) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: t.obj.GetName(), Namespace: t.obj.GetNamespace(), ResourceVersion: t.obj.GetResourceVersion()},
		Spec:       autoscalingv1.ScaleSpec{Replicas: t.replicas},
	}
}

// liveReplicas reads spec.replicas through the scale subresource, bypassing
// any cache: what a pause saves must be what the workload has now. The scale
// is kept in t for one scaleTo.
func liveReplicas(ctx context.Context, c client.Client, t *target) (int32, error) {
	scale, err := napwakescale.Get(ctx, c, t.obj)
	if err != nil {
		return 0, fmt.Errorf("reading the scale of %s: %w", client.ObjectKeyFromObject(t.obj), err)
	}
	t.scale = scale
	return scale.Spec.Replicas, nil
}
