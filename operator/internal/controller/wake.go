package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/timeline"
)

// The wake's timeline (docs/pause.md#where-a-wakes-time-went) is gathered here and worked
// out by package timeline: the wake's first status write records the
// signal's time and source in status.lastWake; the scale's write is
// remembered in memory (wakeScales), keyed by the wake's resumedAt; and the
// write that makes it Running reads the wake's first Ready pod and
// completes status.lastWake, whose steps the metrics then observe once.

// wakeScales remembers, per ManagedWorkload, when the scale of its wake
// under way was written.
type wakeScales struct{ m sync.Map } // types.NamespacedName → wakeScale

// set notes the scale of key's wake that began at resumedAt was written at.
func (w *wakeScales) set(key types.NamespacedName, resumedAt, at time.Time) {
	w.m.Store(key, wakeScale{resumedAt: resumedAt, at: at})
}

// get returns when the scale of key's wake that began at resumedAt was
// written; zero when not known.
func (w *wakeScales) get(key types.NamespacedName, resumedAt time.Time) time.Time {
	v, ok := w.m.Load(key)
	if sc, _ := v.(wakeScale); ok && sc.resumedAt.Equal(resumedAt) {
		return sc.at
	}
	return time.Time{}
}

// forget drops key's entry: once its wake's Running is written (a write
// that fails keeps it for the retry), or the ManagedWorkload is gone.
func (w *wakeScales) forget(key types.NamespacedName) { w.m.Delete(key) }

// wakeScale is when the scale of the wake that began at resumedAt was
// written.
type wakeScale struct{ resumedAt, at time.Time }

// wakeBegun is status.lastWake for the wake step begins at now: its
// signal and source, the rest filled in once it is Running. A signal with
// no time of its own starts the wake now (startedAt is required).
func wakeBegun(step decide.Step, now time.Time) *napwakev1alpha1.LastWakeStatus {
	at := step.WokenAt
	if at.IsZero() {
		at = now
	}
	return &napwakev1alpha1.LastWakeStatus{StartedAt: metav1.NewTime(at), Source: step.Woken}
}

// scaledUp notes that the scale of the wake under way was written now.
func (r *ManagedWorkloadReconciler) scaledUp(s *reconcileScope, now time.Time) {
	if s.mw.Status.Phase != napwakev1alpha1.PhaseResuming || s.mw.Status.ResumedAt == nil {
		return
	}
	r.wakeScales.set(client.ObjectKeyFromObject(s.mw), s.mw.Status.ResumedAt.Time, now)
}

// wakeDone works out the timeline of the wake step ends (making it
// Running at now) for the status write that follows.
func (r *ManagedWorkloadReconciler) wakeDone(ctx context.Context, s *reconcileScope, now time.Time) {
	st := s.mw.Status
	if st.ResumedAt == nil {
		return
	}
	in := timeline.Input{ResumedAt: st.ResumedAt.Time, RunningAt: now}
	if at, ok := wakeSignal(st.LastWake, st.ResumedAt.Time); ok {
		in.Source, in.SignalAt = st.LastWake.Source, at
	} else {
		in.Source = st.LastActivitySource
	}
	in.ScaledAt = r.wakeScales.get(client.ObjectKeyFromObject(s.mw), st.ResumedAt.Time)
	pod, err := firstReadyPod(ctx, r.APIReader, s.mw.Namespace, s.t, st.ResumedAt.Time)
	if err != nil {
		// The timeline never holds a wake up: it goes without its pod.
		ctrl.LoggerFrom(ctx).Error(err, "Reading the wake's pods for its timeline")
	}
	in.Pod = pod
	s.lastWake = timeline.Of(in).Status()
}

// wakeSignal is when the signal of the wake begun at resumedAt fired, from
// the status.lastWake its first write recorded; ok is false when w is not
// that wake's (none, or one already complete). The signal may read up to a
// second after resumedAt: the doorman stamps by the API server's clock
// read from a Date header, never early but up to a second late
// (docs/design/time.md#clocks-that-are-off), and the operator cuts
// resumedAt to the second;
// timeline.Of counts such a signal as the wake's start.
func wakeSignal(w *napwakev1alpha1.LastWakeStatus, resumedAt time.Time) (time.Time, bool) {
	if w == nil || w.TotalMilliseconds != 0 || w.StartedAt.After(resumedAt.Add(time.Second)) {
		return time.Time{}, false
	}
	return w.StartedAt.Time, true
}

// firstReadyPod is the target's Ready pod created at or after the wake
// began (resumedAt, whole seconds) that turned Ready first; else the
// earliest Ready one of those older, so the timeline can say so; nil when
// no pod is Ready.
func firstReadyPod(ctx context.Context, r client.Reader, namespace string, t target, resumedAt time.Time) (*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(t.selector)
	if err != nil || sel.Empty() || sel.String() == labels.Nothing().String() {
		return nil, err
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", client.ObjectKeyFromObject(t.obj), err)
	}
	var best *corev1.Pod
	better := func(p *corev1.Pod) bool {
		if best == nil {
			return true
		}
		isNew, bestNew := !p.CreationTimestamp.Time.Before(resumedAt), !best.CreationTimestamp.Time.Before(resumedAt)
		if isNew != bestNew {
			return isNew
		}
		return readyAt(p).Before(readyAt(best))
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && !readyAt(p).IsZero() && better(p) {
			best = p
		}
	}
	return best, nil
}

// readyAt is when p turned Ready; zero when it is not.
func readyAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
