package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// An autoscaler (a HorizontalPodAutoscaler, a KEDA ScaledObject) whose spec
// changes while its workload is paused changes nothing Napwake does: the
// wake restores the replicas saved at the pause, and the autoscaler scales
// from there. It is reported, so whoever changed it is not surprised: the
// watch notes each new generation of its spec (autoscalerHandler), and the
// next reconcile of a paused workload gives an AutoscalerChanged event for
// each note (reportAutoscalerChanges); notes taken while it runs are
// dropped.

// replicaBounds are an autoscaler's minimum and maximum replicas; nil when
// unset (or unreadable).
type replicaBounds struct{ Min, Max *int64 }

// autoscalerChange says what changed between two generations of an
// autoscaler's spec: its min and max replicas (by the names its kind gives
// them) where they changed, else that the rest of its spec did.
func autoscalerChange(minName, maxName string, old, cur replicaBounds) string {
	var parts []string
	for _, f := range []struct {
		name     string
		old, cur *int64
	}{{minName, old.Min, cur.Min}, {maxName, old.Max, cur.Max}} {
		if bound(f.old) != bound(f.cur) {
			parts = append(parts, f.name+" "+bound(f.old)+" → "+bound(f.cur))
		}
	}
	if len(parts) == 0 {
		return "its spec changed"
	}
	return strings.Join(parts, ", ")
}

func bound(v *int64) string {
	if v == nil {
		return "unset"
	}
	return strconv.FormatInt(*v, 10)
}

// autoscalerKind is what the watch needs of one kind of autoscaler.
type autoscalerKind struct {
	kind             string
	minName, maxName string
	// target names the workload it scales: the ManagedWorkloads of that
	// target are enqueued.
	target func(ctx context.Context, o client.Object) []reconcile.Request
	bounds func(o client.Object) replicaBounds
}

// hpaKind is autoscaling/v2 HorizontalPodAutoscaler.
func (r *ManagedWorkloadReconciler) hpaKind() autoscalerKind {
	return autoscalerKind{
		kind: "HorizontalPodAutoscaler", minName: "minReplicas", maxName: "maxReplicas",
		target: func(ctx context.Context, o client.Object) []reconcile.Request {
			h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
			if !ok {
				return nil
			}
			ref := h.Spec.ScaleTargetRef
			return r.mapScaled(ctx, h.Namespace, ref.APIVersion, ref.Kind, ref.Name)
		},
		bounds: func(o client.Object) replicaBounds {
			h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
			if !ok {
				return replicaBounds{}
			}
			b := replicaBounds{Max: int64Of(&h.Spec.MaxReplicas)}
			if h.Spec.MinReplicas != nil {
				b.Min = int64Of(h.Spec.MinReplicas)
			}
			return b
		},
	}
}

// scaledObjectKind is KEDA's ScaledObject.
func (r *ManagedWorkloadReconciler) scaledObjectKind() autoscalerKind {
	return autoscalerKind{
		kind: ScaledObjectGVK.Kind, minName: "minReplicaCount", maxName: "maxReplicaCount",
		target: r.mapScaledObject,
		bounds: func(o client.Object) replicaBounds {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				return replicaBounds{}
			}
			get := func(field string) *int64 {
				if v, ok, err := unstructured.NestedInt64(u.Object, "spec", field); ok && err == nil {
					return &v
				}
				return nil
			}
			return replicaBounds{Min: get("minReplicaCount"), Max: get("maxReplicaCount")}
		},
	}
}

func int64Of(v *int32) *int64 {
	n := int64(*v)
	return &n
}

// autoscalerHandler enqueues the ManagedWorkloads of the target an
// autoscaler of kind k scales, at every event, and notes for them each
// change of its spec (a new generation).
func (r *ManagedWorkloadReconciler) autoscalerHandler(k autoscalerKind) handler.EventHandler {
	add := func(q queue, reqs []reconcile.Request) {
		for _, req := range reqs {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { add(q, k.target(ctx, e.Object)) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { add(q, k.target(ctx, e.Object)) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			reqs := k.target(ctx, e.ObjectNew)
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				what := autoscalerChange(k.minName, k.maxName, k.bounds(e.ObjectOld), k.bounds(e.ObjectNew))
				for _, req := range reqs {
					r.autoscalerNotes.add(req.NamespacedName, fmt.Sprintf("%s %s: %s", k.kind, e.ObjectNew.GetName(), what))
				}
			}
			add(q, reqs)
		},
	}
}

// specChanged passes only updates of an object's spec (a new generation):
// an HPA's own status writes, every 15 s, bring nothing back.
var specChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
	},
}

// mapScaled enqueues the ManagedWorkloads of the target an autoscaler's
// scaleTargetRef names (an empty apiVersion is apps/v1).
func (r *ManagedWorkloadReconciler) mapScaled(ctx context.Context, namespace, apiVersion, kind, name string) []reconcile.Request {
	if apiVersion == "" {
		apiVersion = napwakev1alpha1.AppsV1
	}
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	return r.mapTarget(gvk)(ctx, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
}

// autoscalerNotes holds, per ManagedWorkload, the autoscaler changes seen
// since its last reconcile.
type autoscalerNotes struct {
	mu    sync.Mutex
	notes map[types.NamespacedName][]string
}

func (n *autoscalerNotes) add(key types.NamespacedName, note string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.notes == nil {
		n.notes = map[types.NamespacedName][]string{}
	}
	n.notes[key] = append(n.notes[key], note)
}

func (n *autoscalerNotes) take(key types.NamespacedName) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.notes[key]
	delete(n.notes, key)
	return out
}

// reportAutoscalerChanges gives an AutoscalerChanged event for each change
// of an autoscaler of the target seen while the workload is paused (or
// pausing): the replicas saved at the pause still win on wake.
func (r *ManagedWorkloadReconciler) reportAutoscalerChanges(_ context.Context, s *reconcileScope) (*reconcile.Result, error) {
	notes := r.autoscalerNotes.take(client.ObjectKeyFromObject(s.mw))
	p := s.mw.Status.Pause
	if p == nil || (s.mw.Status.Phase != napwakev1alpha1.PhasePaused && s.mw.Status.Phase != napwakev1alpha1.PhasePausing) {
		return nil, nil
	}
	for _, note := range notes {
		r.Recorder.Eventf(s.mw, nil, corev1.EventTypeWarning, napwakev1alpha1.EventAutoscalerChanged, napwakev1alpha1.EventAutoscalerChanged,
			"%s while paused; the wake restores the %d replicas saved at the pause, and the autoscaler scales from there", note, p.Replicas)
	}
	return nil, nil
}
