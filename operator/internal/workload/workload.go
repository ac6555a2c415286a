// Package workload reads a target of a kind other than apps/v1 Deployment
// and StatefulSet: any kind with a scale subresource the operator is given
// with --target-kinds (docs/pause.md#other-kinds-of-workload). It is read
// as unstructured, its GVK resolved through the RESTMapper; its replicas
// are the scale subresource's, its pods those matching the scale's
// status.selector, its Ready replicas the Ready pods among them, and its
// pod template spec.template when it has one.
//
// What makes a target impossible to pause is a NotScalableError whose
// message names why; the ManagedWorkload then gets TargetAvailable False
// TargetNotScalable and nothing is paused. The messages and the parsing of
// --target-kinds are pure, and table-tested.
package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/scale"
)

// FlagTargetKinds is the operator flag listing the kinds it may pause
// beyond Deployment and StatefulSet.
const FlagTargetKinds = "--target-kinds"

// AnnotationTemplateFromSelector marks a pod template made up from the
// scale's selector, for a kind without spec.template: its labels are the
// selector's, and it says nothing about the pods' containers (so no
// readiness-probe check can be made from it).
const AnnotationTemplateFromSelector = "napwake.dev/template-from-selector"

// ParseKinds reads --target-kinds: a comma-separated list of
// group/version/Kind (argoproj.io/v1alpha1/Rollout; v1/Kind for the core
// group). Deployment and StatefulSet of apps/v1 are always known, and
// refused here so the list says only what it adds.
func ParseKinds(s string) ([]schema.GroupVersionKind, error) {
	var out []schema.GroupVersionKind
	var errs []error
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		at := strings.LastIndex(item, "/")
		if at <= 0 || at == len(item)-1 {
			errs = append(errs, fmt.Errorf("%s %q: want group/version/Kind, e.g. argoproj.io/v1alpha1/Rollout", FlagTargetKinds, item))
			continue
		}
		gv, err := schema.ParseGroupVersion(item[:at])
		kind := item[at+1:]
		if err != nil || gv.Version == "" || kind[0] < 'A' || kind[0] > 'Z' {
			errs = append(errs, fmt.Errorf("%s %q: want group/version/Kind, e.g. argoproj.io/v1alpha1/Rollout", FlagTargetKinds, item))
			continue
		}
		gvk := gv.WithKind(kind)
		ref := napwakev1alpha1.TargetRef{APIVersion: gv.String(), Kind: napwakev1alpha1.TargetKind(kind)}
		if ref.IsApps() {
			errs = append(errs, fmt.Errorf("%s %q: apps/v1 Deployment and StatefulSet are always paused; list only other kinds", FlagTargetKinds, item))
			continue
		}
		if !slices.Contains(out, gvk) {
			out = append(out, gvk)
		}
	}
	return out, errors.Join(errs...)
}

// NotScalableError says why a target cannot be paused by Napwake.
type NotScalableError struct{ Why string }

func (e *NotScalableError) Error() string { return e.Why }

func notScalable(format string, args ...any) error {
	return &NotScalableError{Why: fmt.Sprintf(format, args...)}
}

// Messages of NotScalableError, by cause; pure, so they are table-tested.

// NotGiven: the kind is not in --target-kinds.
func NotGiven(gvk schema.GroupVersionKind) string {
	return fmt.Sprintf("%s is not a kind the operator is given: add %s to %s (the chart's operator.targetKinds) to pause it",
		kindName(gvk), gvk.GroupVersion().String()+"/"+gvk.Kind, FlagTargetKinds)
}

// NotServed: the API server serves no such kind.
func NotServed(gvk schema.GroupVersionKind) string {
	return fmt.Sprintf("the API server serves no kind %s in %s: is its CRD installed, and is targetRef.apiVersion right?", gvk.Kind, gvk.GroupVersion())
}

// Forbidden: the operator may not do verb on what.
func Forbidden(gvk schema.GroupVersionKind, what string) string {
	return fmt.Sprintf("the operator may not %s of kind %s: grant it in the chart's operator.targetKinds (get, list, watch on the resource; get, update, patch on its scale)", what, kindName(gvk))
}

// NoScale: the kind has no scale subresource.
func NoScale(gvk schema.GroupVersionKind) string {
	return fmt.Sprintf("kind %s has no scale subresource, so Napwake cannot scale it to zero and back", kindName(gvk))
}

// NoSelector: the scale's status.selector is empty or unreadable.
func NoSelector(gvk schema.GroupVersionKind, selector string, err error) string {
	if selector == "" {
		return fmt.Sprintf("the scale of this %s has an empty status.selector (its CRD's labelSelectorPath, or its controller's status, names none), so Napwake cannot find its pods", kindName(gvk))
	}
	return fmt.Sprintf("the scale of this %s has a status.selector %q that cannot be read: %v", kindName(gvk), selector, err)
}

// NoTemplate is added to TargetAvailable's message when the object has no
// spec.template.
const NoTemplate = "it has no pod template (spec.template) to read: Services are found by its scale selector's labels, and whether its pods have a readiness probe is not checked"

func kindName(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind
	}
	return gvk.Kind + "." + gvk.Group
}

// Given says whether gvk is one of kinds.
func Given(kinds []schema.GroupVersionKind, gvk schema.GroupVersionKind) bool {
	return slices.Contains(kinds, gvk)
}

// Target is a target read as unstructured, with what Napwake needs of it.
type Target struct {
	Obj   *unstructured.Unstructured
	Scale *autoscalingv1.Scale
	// Selector is the scale's status.selector.
	Selector *metav1.LabelSelector
	// Template is spec.template, or one made up from Selector's labels
	// (marked AnnotationTemplateFromSelector) when there is none.
	Template *corev1.PodTemplateSpec
	// TemplateNote is NoTemplate when Template was made up; else "".
	TemplateNote string
	// ReadyReplicas counts the Ready pods matching Selector.
	ReadyReplicas int32
}

// Get reads the target ref names in namespace; found is false when the
// object does not exist. A kind the operator is not given, not served,
// forbidden (to read it, read its scale, or write its scale: a dry run
// asks), without a scale subresource or without a readable selector is a
// *NotScalableError naming why. The object and its scale are read live.
func Get(ctx context.Context, c client.Client, kinds []schema.GroupVersionKind, namespace string, ref napwakev1alpha1.TargetRef) (t Target, found bool, err error) {
	gvk, err := ref.GroupVersionKind()
	if err != nil {
		return Target{}, false, notScalable("%v", err)
	}
	if !Given(kinds, gvk) {
		return Target{}, false, notScalable("%s", NotGiven(gvk))
	}
	if _, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return Target{}, false, notScalable("%s", NotServed(gvk))
		}
		return Target{}, false, fmt.Errorf("finding the resource of %s: %w", gvk, err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, obj); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return Target{}, false, nil
		case apierrors.IsForbidden(err):
			return Target{}, false, notScalable("%s", Forbidden(gvk, "read objects"))
		case meta.IsNoMatchError(err):
			return Target{}, false, notScalable("%s", NotServed(gvk))
		}
		return Target{}, false, fmt.Errorf("getting %s %s/%s: %w", gvk.Kind, namespace, ref.Name, err)
	}
	s, err := scale.Get(ctx, c, obj)
	if err != nil {
		switch {
		case apierrors.IsNotFound(err):
			// The object was just read: what is not found is its scale.
			return Target{}, false, notScalable("%s", NoScale(gvk))
		case apierrors.IsForbidden(err):
			return Target{}, false, notScalable("%s", Forbidden(gvk, "read the scale subresource"))
		}
		return Target{}, false, fmt.Errorf("reading the scale of %s %s/%s: %w", gvk.Kind, namespace, ref.Name, err)
	}
	sel, err := ParseSelector(s.Status.Selector)
	if err != nil {
		return Target{}, false, notScalable("%s", NoSelector(gvk, s.Status.Selector, err))
	}
	// May the operator write it? A dry run of the same count asks the API
	// server, before any pause is recorded, so that no pause begins that
	// could not scale.
	if err := scale.Update(ctx, c, obj, s.DeepCopy(), client.DryRunAll); err != nil {
		switch {
		case apierrors.IsForbidden(err):
			return Target{}, false, notScalable("%s", Forbidden(gvk, "update the scale subresource"))
		case !apierrors.IsConflict(err): // a conflict: changed since read, read again next time
			return Target{}, false, fmt.Errorf("trying a write of the scale of %s %s/%s: %w", gvk.Kind, namespace, ref.Name, err)
		}
	}
	t = Target{Obj: obj, Scale: s, Selector: sel}
	t.Template, t.TemplateNote = TemplateOf(obj.Object, sel)
	ready, err := ReadyPods(ctx, c, namespace, sel)
	if err != nil {
		return Target{}, false, err
	}
	t.ReadyReplicas = ready
	return t, true, nil
}

// ParseSelector reads a scale's status.selector (a label selector string);
// empty is an error: a selector matching everything is no workload's.
func ParseSelector(s string) (*metav1.LabelSelector, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty")
	}
	if _, err := labels.Parse(s); err != nil {
		return nil, err
	}
	ls, err := metav1.ParseToLabelSelector(s)
	if err != nil {
		return nil, err
	}
	return ls, nil
}

// TemplateOf is obj's spec.template, or, when it has none (or one that
// cannot be read), a template carrying sel's equality labels and marked
// AnnotationTemplateFromSelector, with note NoTemplate.
func TemplateOf(obj map[string]any, sel *metav1.LabelSelector) (*corev1.PodTemplateSpec, string) {
	if m, ok, err := unstructured.NestedMap(obj, "spec", "template"); ok && err == nil {
		t := &corev1.PodTemplateSpec{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, t); err == nil {
			return t, ""
		}
	}
	t := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{},
		Annotations: map[string]string{AnnotationTemplateFromSelector: "true"},
	}}
	if sel != nil {
		for k, v := range sel.MatchLabels {
			t.Labels[k] = v
		}
		for _, r := range sel.MatchExpressions {
			if r.Operator == metav1.LabelSelectorOpIn && len(r.Values) == 1 {
				t.Labels[r.Key] = r.Values[0]
			}
		}
	}
	return t, NoTemplate
}

// ReadyPods counts the pods matching sel in namespace that are Ready and not
// terminating: a pod in its preStop or grace period may still say Ready, but
// it is leaving and serves no wake.
func ReadyPods(ctx context.Context, c client.Reader, namespace string, sel *metav1.LabelSelector) (int32, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return 0, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: s}); err != nil {
		return 0, fmt.Errorf("listing pods matching %s: %w", s, err)
	}
	var n int32
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil && podReady(&pods.Items[i]) {
			n++
		}
	}
	return n, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
