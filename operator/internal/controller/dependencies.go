package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/deps"
)

// graph is the reconciler's dependency graph (package deps), made on first
// use so a reconciler built in a test needs none.
func (r *ManagedWorkloadReconciler) graph() *deps.Graph {
	r.graphOnce.Do(func() {
		if r.Graph == nil {
			r.Graph = deps.NewGraph()
		}
	})
	return r.Graph
}

// updateGraph records mw in the graph as it is now and returns the workloads
// whose decisions that may have moved. The graph handler calls it for every
// event of the ManagedWorkload informer; a reconcile calls it too, at its
// top and after each of its status writes, so the graph never lags behind
// what the reconciler itself wrote (and a test calling Reconcile directly,
// with no informer, still feeds it).
func (r *ManagedWorkloadReconciler) updateGraph(mw *napwakev1alpha1.ManagedWorkload) []deps.Key {
	return r.graph().Upsert(deps.KeyOf(mw), deps.NodeFrom(mw), r.Clock.Now())
}

// wakeBegan says that new began a wake of its own, one that is not a
// dependent's (a dependent's wake is part of its origin's plan already).
func wakeBegan(old, mw *napwakev1alpha1.ManagedWorkload) bool {
	st := mw.Status
	if st.Phase != napwakev1alpha1.PhaseResuming || st.ResumedAt == nil || st.LastActivitySource == napwakev1alpha1.SourceDependent {
		return false
	}
	return old == nil || old.Status.ResumedAt == nil || !old.Status.ResumedAt.Equal(st.ResumedAt)
}

// wakeTargets are the workloads in key's wake plan that are asleep: their
// reconciles start their wakes (deps.Graph.WokenBy), all at once.
func (r *ManagedWorkloadReconciler) wakeTargets(key deps.Key) []deps.Key {
	var out []deps.Key
	for _, t := range r.graph().Wake(key).Wake {
		if t.Phase == napwakev1alpha1.PhasePaused || t.Phase == napwakev1alpha1.PhasePausing {
			out = append(out, t.Key)
		}
	}
	return out
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func enqueue(q queue, keys []deps.Key) {
	for _, k := range keys {
		q.Add(reconcile.Request{NamespacedName: k})
	}
}

// graphHandler feeds the graph from the ManagedWorkload informer, every
// event status changes included, and enqueues what each change may move:
// the keys Upsert and Delete return, and a new wake's plan.
func (r *ManagedWorkloadReconciler) graphHandler() handler.EventHandler {
	mwOf := func(o client.Object) *napwakev1alpha1.ManagedWorkload {
		mw, _ := o.(*napwakev1alpha1.ManagedWorkload)
		return mw
	}
	changed := func(old, mw *napwakev1alpha1.ManagedWorkload, q queue) {
		if mw == nil {
			return
		}
		enqueue(q, r.updateGraph(mw))
		if wakeBegan(old, mw) {
			enqueue(q, r.wakeTargets(deps.KeyOf(mw)))
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) { changed(nil, mwOf(e.Object), q) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			changed(mwOf(e.ObjectOld), mwOf(e.ObjectNew), q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			enqueue(q, r.graph().Delete(client.ObjectKeyFromObject(e.Object), r.Clock.Now()))
		},
	}
}

// namespaceHandler feeds the graph each Namespace's dependents-from.
func (r *ManagedWorkloadReconciler) namespaceHandler() handler.EventHandler {
	set := func(ctx context.Context, o client.Object, q queue) {
		if ns, ok := o.(*corev1.Namespace); ok {
			enqueue(q, r.namespaceChanged(ctx, ns))
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { set(ctx, e.Object, q) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) { set(ctx, e.ObjectNew, q) },
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			enqueue(q, r.graph().DeleteNamespace(e.Object.GetName()))
		},
	}
}

// namespaceChanged records ns's napwake.dev/dependents-from; items that are
// not namespace names are logged and ignored.
func (r *ManagedWorkloadReconciler) namespaceChanged(ctx context.Context, ns *corev1.Namespace) []deps.Key {
	allow, problems := deps.ParseDependentsFrom(ns.Annotations[napwakev1alpha1.AnnotationDependentsFrom])
	if len(problems) > 0 {
		ctrl.LoggerFrom(ctx).Info("Ignoring items of "+napwakev1alpha1.AnnotationDependentsFrom, "namespace", ns.Name, "problems", problems)
	}
	return r.graph().SetNamespace(ns.Name, allow)
}

// dependents works out what mw's dependents say to its cycle now, and
// keeps the hold for the Dependencies condition.
func (r *ManagedWorkloadReconciler) dependents(s *reconcileScope, now time.Time) decide.Dependents {
	g, key, st := r.graph(), deps.KeyOf(s.mw), s.mw.Status
	var d decide.Dependents
	if (st.Phase == napwakev1alpha1.PhasePaused || st.Phase == napwakev1alpha1.PhasePausing) && st.Pause != nil {
		if w, ok := g.WokenBy(key, st.Pause.StartedAt.Time); ok {
			d.WokeAt, d.WokenBy = w.At, w.String()
		}
	}
	s.hold = g.Hold(key, now)
	d.Held, d.HeldUntil, d.ReleasedAt = s.hold.Held, s.hold.RecheckAt, s.hold.ReleasedAt
	return d
}

// refused emits the event for a newly refused dependency.
func (r *ManagedWorkloadReconciler) refused(s *reconcileScope, refusal string) {
	if refusal == "" {
		return
	}
	c := meta.FindStatusCondition(s.mw.Status.Conditions, napwakev1alpha1.ConditionDependencies)
	r.Recorder.Eventf(s.mw, nil, corev1.EventTypeWarning, c.Reason, c.Reason, "%s; the others still wake", refusal)
}

// learnedEqual compares two status.dependencies.
func learnedEqual(a, b *napwakev1alpha1.DependenciesStatus) bool {
	if a == nil || b == nil {
		return (a == nil || len(a.Learned) == 0) && (b == nil || len(b.Learned) == 0)
	}
	if len(a.Learned) != len(b.Learned) {
		return false
	}
	for i := range a.Learned {
		x, y := a.Learned[i], b.Learned[i]
		if x.Namespace != y.Namespace || x.Name != y.Name || !x.LastSeen.Equal(&y.LastSeen) {
			return false
		}
	}
	return true
}
