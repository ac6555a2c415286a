package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/settings"
)

// OptInReconciler manages the ManagedWorkloads of labelled workloads of one
// kind (docs/design/api.md#opting-in-by-label): a Deployment, StatefulSet or
// other kind of --target-kinds labelled
// napwake.dev/enabled=true, or in a Namespace so labelled, and not labelled
// napwake.dev/ignore=true, gets a ManagedWorkload it owns, with its settings
// from annotations. When it stops being opted in, the ManagedWorkload is
// deleted, and its finalizer wakes the workload.
//
// Naming: a Deployment's ManagedWorkload has its name; a StatefulSet's too,
// unless a Deployment of that name exists or the name is taken, then
// <name>-statefulset (a Deployment whose name is taken gets <name>-deployment);
// another kind's has its name, or <name>-<kind in lower case> when taken.
// A ManagedWorkload someone wrote by hand for the workload wins: the label
// then creates nothing.
type OptInReconciler struct {
	// Client reads (the cache) and writes.
	Client client.Client
	// GVK is apps/v1 Deployment or StatefulSet, or a kind of --target-kinds
	// (read as metadata: labels and annotations are all opt-in needs).
	GVK schema.GroupVersionKind
	// Defaults are the operator's settings.
	Defaults settings.Defaults
	// Recorder emits InvalidSetting events on workloads.
	Recorder events.EventRecorder
}

var _ reconcile.Reconciler = (*OptInReconciler)(nil)

// SetupWithManager watches workloads of r.Kind, Namespaces (their label and
// annotations apply to every workload in them) and owned ManagedWorkloads.
// It lists ManagedWorkloads by the IndexTargetRef index, which the manager
// adds first (IndexManagedWorkloads).
func (r *OptInReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("OptInReconciler needs Client and Recorder")
	}
	obj, err := r.newObject()
	if err != nil {
		return err
	}
	name := "optin-" + r.GVK.Kind
	if !r.apps() {
		name = "optin-" + strings.ToLower(r.GVK.Kind+"."+r.GVK.Group)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(obj, builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionPredicate{})))
	owned := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	if r.apps() {
		b = b.Owns(&napwakev1alpha1.ManagedWorkload{}, owned)
	} else {
		// Owns needs the owner's Go type in the scheme; a kind read as
		// metadata has none, so its owned ManagedWorkloads are mapped by
		// their controller reference.
		b = b.Watches(&napwakev1alpha1.ManagedWorkload{}, handler.EnqueueRequestsFromMapFunc(r.mapOwned), owned)
	}
	return b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.mapNamespace),
		builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Complete(r)
}

// mapOwned enqueues the workload of r's kind controlling a ManagedWorkload.
func (r *OptInReconciler) mapOwned(_ context.Context, o client.Object) []reconcile.Request {
	owner := metav1.GetControllerOf(o)
	if owner == nil || owner.Kind != r.GVK.Kind {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(owner.APIVersion); err != nil || gv.Group != r.GVK.Group {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: owner.Name}}}
}

// ref is the targetRef of r's kind naming name: no apiVersion for the
// apps/v1 kinds, as ManagedWorkloads written before it had none.
func (r *OptInReconciler) ref(name string) napwakev1alpha1.TargetRef {
	ref := napwakev1alpha1.TargetRef{APIVersion: r.GVK.GroupVersion().String(), Kind: napwakev1alpha1.TargetKind(r.GVK.Kind), Name: name}
	if ref.IsApps() {
		ref.APIVersion = ""
	}
	return ref
}

func (r *OptInReconciler) apps() bool { return r.ref("").IsApps() }

// newObject is an empty workload of r's kind: typed for the apps/v1
// kinds, metadata only for others.
func (r *OptInReconciler) newObject() (client.Object, error) {
	if r.apps() {
		return newTargetObject(napwakev1alpha1.TargetKind(r.GVK.Kind))
	}
	return watchable(r.GVK), nil
}

func (r *OptInReconciler) mapNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	var keys []types.NamespacedName
	var err error
	switch {
	case !r.apps():
		var l metav1.PartialObjectMetadataList
		l.SetGroupVersionKind(r.GVK.GroupVersion().WithKind(r.GVK.Kind + "List"))
		err = r.Client.List(ctx, &l, client.InNamespace(ns.GetName()))
		for i := range l.Items {
			keys = append(keys, client.ObjectKeyFromObject(&l.Items[i]))
		}
	case r.GVK.Kind == string(napwakev1alpha1.KindDeployment):
		var l appsv1.DeploymentList
		err = r.Client.List(ctx, &l, client.InNamespace(ns.GetName()))
		for i := range l.Items {
			keys = append(keys, client.ObjectKeyFromObject(&l.Items[i]))
		}
	default:
		var l appsv1.StatefulSetList
		err = r.Client.List(ctx, &l, client.InNamespace(ns.GetName()))
		for i := range l.Items {
			keys = append(keys, client.ObjectKeyFromObject(&l.Items[i]))
		}
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing workloads of a namespace", "namespace", ns.GetName())
	}
	reqs := make([]reconcile.Request, len(keys))
	for i, k := range keys {
		reqs[i] = reconcile.Request{NamespacedName: k}
	}
	return reqs
}

// Reconcile makes the ManagedWorkload of one workload match its labels and annotations.
func (r *OptInReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wl, err := r.newObject()
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	if err := r.Client.Get(ctx, req.NamespacedName, wl); err != nil {
		// Gone: the garbage collector deletes the owned ManagedWorkload.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: req.Namespace}, ns); err != nil {
		return reconcile.Result{}, fmt.Errorf("getting namespace %s: %w", req.Namespace, err)
	}
	existing, handmade, err := r.managedWorkloadsFor(ctx, wl)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !OptedIn(wl, ns) || handmade {
		for _, mw := range existing {
			// The finalizer restores the replicas of a paused workload.
			if err := r.Client.Delete(ctx, mw); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting ManagedWorkload %s: %w", klog.KObj(mw), err)
			}
			ctrl.LoggerFrom(ctx).Info("Stopped managing a workload", "managedWorkload", klog.KObj(mw))
		}
		return reconcile.Result{}, nil
	}

	ref := r.ref(wl.GetName())
	spec, warnings := settings.Spec(ref.Kind, ref.Name, wl.GetAnnotations(), ns.GetAnnotations(), r.Defaults)
	spec.TargetRef = ref
	if len(existing) > 0 {
		mw := existing[0]
		if reflect.DeepEqual(mw.Spec, spec) {
			return reconcile.Result{}, nil
		}
		mw.Spec = spec
		if err := r.Client.Update(ctx, mw); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: conflictRetry}, nil
			}
			return reconcile.Result{}, fmt.Errorf("updating ManagedWorkload %s: %w", klog.KObj(mw), err)
		}
		r.warn(wl, warnings)
		return reconcile.Result{}, nil
	}

	name, err := r.nameFor(ctx, wl)
	if err != nil {
		return reconcile.Result{}, err
	}
	gvk := r.GVK
	mw := &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: wl.GetNamespace(),
			Labels: map[string]string{napwakev1alpha1.LabelManagedBy: napwakev1alpha1.ManagedByOperator},
			// No blockOwnerDeletion: that would need update on the
			// workload's finalizers subresource, and nothing waits on it.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: wl.GetName(), UID: wl.GetUID(), Controller: ptr.To(true),
			}},
		},
		Spec: spec,
	}
	if err := r.Client.Create(ctx, mw); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return reconcile.Result{}, fmt.Errorf("creating ManagedWorkload %s: %w", klog.KObj(mw), err)
	}
	ctrl.LoggerFrom(ctx).Info("Managing a labelled workload", "managedWorkload", klog.KObj(mw))
	r.warn(wl, warnings)
	return reconcile.Result{}, nil
}

// OptedIn says whether a workload in ns is opted in by label.
func OptedIn(wl client.Object, ns *corev1.Namespace) bool {
	if wl.GetDeletionTimestamp() != nil || wl.GetLabels()[napwakev1alpha1.LabelIgnore] == "true" {
		return false
	}
	return wl.GetLabels()[napwakev1alpha1.LabelEnabled] == "true" || ns.GetLabels()[napwakev1alpha1.LabelEnabled] == "true"
}

func (r *OptInReconciler) warn(wl client.Object, warnings []settings.Warning) {
	for _, w := range warnings {
		r.Recorder.Eventf(wl, nil, corev1.EventTypeWarning, napwakev1alpha1.EventInvalidSetting, napwakev1alpha1.EventInvalidSetting, "%s", w.String())
	}
}

// managedWorkloadsFor returns the ManagedWorkloads this reconciler created
// for wl, and whether one made by someone else targets it.
func (r *OptInReconciler) managedWorkloadsFor(ctx context.Context, wl client.Object) (ours []*napwakev1alpha1.ManagedWorkload, handmade bool, err error) {
	var list napwakev1alpha1.ManagedWorkloadList
	if err := r.Client.List(ctx, &list, client.InNamespace(wl.GetNamespace()), client.MatchingFields{IndexTargetRef: r.ref(wl.GetName()).String()}); err != nil {
		return nil, false, fmt.Errorf("listing ManagedWorkloads in %s: %w", wl.GetNamespace(), err)
	}
	for i := range list.Items {
		mw := &list.Items[i]
		if metav1.IsControlledBy(mw, wl) && mw.Labels[napwakev1alpha1.LabelManagedBy] == napwakev1alpha1.ManagedByOperator {
			if mw.DeletionTimestamp.IsZero() {
				ours = append(ours, mw)
			}
			continue
		}
		handmade = true
	}
	return ours, handmade, nil
}

func (r *OptInReconciler) nameFor(ctx context.Context, wl client.Object) (string, error) {
	name := wl.GetName()
	suffix := "-" + strings.ToLower(r.GVK.Kind)
	if r.apps() && r.GVK.Kind == string(napwakev1alpha1.KindStatefulSet) {
		suffix = "-statefulset"
		taken, err := r.exists(ctx, &appsv1.Deployment{}, wl.GetNamespace(), name)
		if err != nil || taken {
			return name + suffix, err
		}
	}
	taken, err := r.exists(ctx, &napwakev1alpha1.ManagedWorkload{}, wl.GetNamespace(), name)
	if err != nil || taken {
		return name + suffix, err
	}
	return name, nil
}

func (r *OptInReconciler) exists(ctx context.Context, obj client.Object, namespace, name string) (bool, error) {
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("getting %s/%s: %w", namespace, name, err)
	}
	return true, nil
}
