package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/deps"
)

// learnCallerEdge records a learned dependency
// (docs/design/dependencies.md#learned-dependencies): the doorman
// wrote napwake.dev/last-request-from on this workload (the callee) when a
// request woke it; if that address was certainly a Running Pod of another
// managed workload (the caller) at the request's time, the edge caller →
// callee goes on the caller's status.dependencies.learned, with lastSeen
// the request's time. Each last-request-from is looked at once. Failing to
// learn never holds up the callee's own reconcile: it is logged and tried
// again soon.
func (r *ManagedWorkloadReconciler) learnCallerEdge(ctx context.Context, s *reconcileScope) (*reconcile.Result, error) {
	mw := s.mw
	from := mw.Annotations[napwakev1alpha1.AnnotationLastRequestFrom]
	if from == "" {
		return nil, nil
	}
	at, err := time.Parse(time.RFC3339Nano, mw.Annotations[napwakev1alpha1.AnnotationLastRequest])
	if err != nil {
		return nil, nil // no time to tell which Pod held the address then
	}
	key := deps.KeyOf(mw)
	memo := from + "@" + at.UTC().Format(time.RFC3339Nano)
	if done, ok := r.taught.Load(key); ok && done == memo {
		return nil, nil
	}
	caller, err := r.callerOf(ctx, from, at, key)
	if err == nil && caller.Found() {
		err = r.addLearnedEdge(ctx, caller.Workload, key, at)
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Learning a dependency from "+napwakev1alpha1.AnnotationLastRequestFrom, "from", from)
		s.keepSoonest(conflictRetry)
		return nil, nil
	}
	if !caller.Found() {
		ctrl.LoggerFrom(ctx).V(1).Info("Learned no dependency", "from", from, "why", caller.Why, "pod", caller.Pod)
	}
	r.taught.Store(key, memo)
	return nil, nil
}

// callerOf finds the managed workload whose Pod held the address at the
// request's time (deps.CallerOf), through the Pod IP index of the
// manager's cache (Client).
func (r *ManagedWorkloadReconciler) callerOf(ctx context.Context, from string, at time.Time, callee deps.Key) (deps.Caller, error) {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.MatchingFields{IndexPodIP: from}); err != nil {
		return deps.Caller{}, fmt.Errorf("listing Pods with IP %s: %w", from, err)
	}
	pods := make([]deps.Pod, 0, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		w, err := r.workloadOf(ctx, p)
		if err != nil {
			return deps.Caller{}, err
		}
		pods = append(pods, deps.PodFrom(p, w))
	}
	return deps.CallerOf(from, at, callee, pods), nil
}

// maxOwnerHops bounds the walk up a Pod's controller owners: the Pod's
// owner, its ReplicaSet's owner (an Argo Rollout's), and two more for a
// kind that wraps another.
const maxOwnerHops = 4

// workloadOf is the ManagedWorkload whose target controls the Pod, or the
// zero Key. It walks up the Pod's controller owners (ownerTarget names
// the target each may be) until one is a ManagedWorkload's target. A
// Deployment's Pod is owned by its ReplicaSet, named after the Deployment
// and the Pod's pod-template-hash, so no ReplicaSet is read for it. Other
// owners are read (their metadata, from the API server) only when the
// operator pauses kinds beyond Deployment and StatefulSet
// (--target-kinds): an Argo Rollout's Pod is its ReplicaSet's, which is
// the Rollout's (docs/pause.md#other-kinds-of-workload). An owner gone,
// not served or not readable ends the walk with nothing learned.
func (r *ManagedWorkloadReconciler) workloadOf(ctx context.Context, p *corev1.Pod) (deps.Key, error) {
	owner := metav1.GetControllerOf(p)
	if owner == nil {
		return deps.Key{}, nil
	}
	// One namespace's ManagedWorkloads, from the cache, only when a new
	// last-request-from names a Pod: never a list of all of them.
	var list napwakev1alpha1.ManagedWorkloadList
	if err := r.Client.List(ctx, &list, client.InNamespace(p.Namespace)); err != nil {
		return deps.Key{}, fmt.Errorf("listing the ManagedWorkloads of namespace %s: %w", p.Namespace, err)
	}
	targets := make(map[string]deps.Key, len(list.Items))
	for i := range list.Items {
		targets[list.Items[i].Spec.TargetRef.String()] = deps.KeyOf(&list.Items[i])
	}
	hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	for hop := 1; ; hop++ {
		if ref, ok := ownerTarget(*owner, hash); ok {
			if k, ok := targets[ref.String()]; ok {
				return k, nil
			}
		}
		if hop == maxOwnerHops || len(r.TargetKinds) == 0 {
			return deps.Key{}, nil
		}
		o, err := r.ownerOf(ctx, p.Namespace, *owner)
		if o == nil || err != nil {
			return deps.Key{}, err
		}
		if owner = metav1.GetControllerOf(o); owner == nil {
			return deps.Key{}, nil
		}
		hash = o.GetLabels()[appsv1.DefaultDeploymentUniqueLabelKey]
	}
}

// ownerOf reads the metadata of the object ref names in namespace from the
// API server; nil when it is gone, not served or not readable.
func (r *ManagedWorkloadReconciler) ownerOf(ctx context.Context, namespace string, ref metav1.OwnerReference) (*metav1.PartialObjectMetadata, error) {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, o)
	switch {
	case err == nil:
		return o, nil
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || meta.IsNoMatchError(err):
		ctrl.LoggerFrom(ctx).V(1).Info("Not following a Pod's owner", "kind", ref.Kind, "name", ref.Name, "reason", err.Error())
		return nil, nil
	}
	return nil, fmt.Errorf("reading the %s %s/%s that owns a calling Pod: %w", ref.Kind, namespace, ref.Name, err)
}

// addLearnedEdge records callee, seen at, on caller's status.dependencies.learned: a
// merge patch of that field alone, guarded by the caller's resourceVersion.
func (r *ManagedWorkloadReconciler) addLearnedEdge(ctx context.Context, caller, callee deps.Key, at time.Time) error {
	mw := &napwakev1alpha1.ManagedWorkload{}
	if err := r.Client.Get(ctx, caller, mw); err != nil {
		return client.IgnoreNotFound(err)
	}
	var old []napwakev1alpha1.LearnedDependency
	if mw.Status.Dependencies != nil {
		old = mw.Status.Dependencies.Learned
	}
	learned, changed := deps.Learn(old, callee, at, r.Clock.Now())
	if !changed {
		return nil
	}
	base := mw.DeepCopy()
	mw.Status.Dependencies = &napwakev1alpha1.DependenciesStatus{Learned: learned}
	if err := r.Client.Status().Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("recording a learned dependency on %s: %w", klog.KObj(mw), err)
	}
	r.updateGraph(mw)
	ctrl.LoggerFrom(ctx).Info("Learned a dependency", "caller", klog.KObj(mw), "callee", callee)
	return nil
}

// ownerTarget is the targetRef an owner names: a Deployment through its
// ReplicaSet (named after it and hash, the owned object's
// pod-template-hash), a Deployment or StatefulSet itself, or any kind
// outside apps/v1. A ReplicaSet of no Deployment (an Argo Rollout's) and
// other apps/v1 kinds name none.
func ownerTarget(owner metav1.OwnerReference, hash string) (napwakev1alpha1.TargetRef, bool) {
	apps := strings.HasPrefix(owner.APIVersion, appsv1.GroupName+"/")
	switch {
	case apps && owner.Kind == "ReplicaSet":
		name, ok := strings.CutSuffix(owner.Name, "-"+hash)
		if hash == "" || !ok {
			return napwakev1alpha1.TargetRef{}, false
		}
		return napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: name}, true
	case apps && (owner.Kind == string(napwakev1alpha1.KindDeployment) || owner.Kind == string(napwakev1alpha1.KindStatefulSet)):
		return napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.TargetKind(owner.Kind), Name: owner.Name}, true
	case apps:
		return napwakev1alpha1.TargetRef{}, false
	}
	return napwakev1alpha1.TargetRef{APIVersion: owner.APIVersion, Kind: napwakev1alpha1.TargetKind(owner.Kind), Name: owner.Name}, true
}
