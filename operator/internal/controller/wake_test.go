package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
)

// TestAWakeWritesItsTimelineAndObservesEachStepOnce wakes a paused
// workload by a request and plays the kubelet (envtest has none): it
// creates the wake's pod, with a readiness probe, and writes the
// PodScheduled and Ready conditions and the container's startedAt as a
// kubelet would, 1, 2 and 5 s into the wake. The fake clock starts 30 s
// behind the API server's, so the pod the API server stamps is newer than
// the wake, as it is in a cluster.
func TestAWakeWritesItsTimelineAndObservesEachStepOnce(t *testing.T) {
	f := newFixture(t, 0)
	f.clock.SetTime(time.Now().UTC().Truncate(time.Second).Add(-30 * time.Second))
	f.reconcile()
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePaused {
		t.Fatalf("phase %q, want Paused", p)
	}

	f.clock.Step(2 * time.Second)
	signal := f.clock.Now()
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastRequest, f.stamp())
	f.clock.Step(300 * time.Millisecond) // Resuming is written 300 ms after the request, the scale with it
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhaseResuming || mw.Status.LastWake == nil {
		t.Fatalf("phase %q lastWake %+v, want Resuming with the wake's start", mw.Status.Phase, mw.Status.LastWake)
	}
	if w := mw.Status.LastWake; !w.StartedAt.Time.Equal(signal) || w.Source != napwakev1alpha1.SourceRequest || w.TotalMilliseconds != 0 {
		t.Errorf("lastWake as the wake begins %+v, want the request at %v, under way", w, signal)
	}
	resumed := mw.Status.ResumedAt.Time

	// The kubelet's part: the pod, then its times.
	pod := podFor(f.ns)
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{InitialDelaySeconds: 3, PeriodSeconds: 5,
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}
	must(t, k8s.Create(f.ctx, pod))
	kubelet := func(d time.Duration) metav1.Time { return metav1.NewTime(resumed.Add(d)) }
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: kubelet(1 * time.Second)},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: kubelet(5 * time.Second)},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: kubelet(5 * time.Second)},
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.invalid/app:1", ImageID: "registry.invalid/app@sha256:0", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: kubelet(2 * time.Second)}}}}
	must(t, k8s.Status().Update(f.ctx, pod))
	f.clock.SetTime(resumed.Add(5500 * time.Millisecond))
	f.setPods(1, 1)
	f.reconcile()

	mw = f.managedWorkload()
	w := mw.Status.LastWake
	if mw.Status.Phase != napwakev1alpha1.PhaseRunning || w == nil {
		t.Fatalf("phase %q lastWake %+v, want Running with a timeline", mw.Status.Phase, w)
	}
	if want := f.clock.Now().Sub(signal).Milliseconds(); w.TotalMilliseconds != want {
		t.Errorf("total %d ms, want signal → Running, %d ms", w.TotalMilliseconds, want)
	}
	order := []napwakev1alpha1.WakeStepName{napwakev1alpha1.WakeStepWoken, napwakev1alpha1.WakeStepScaled, napwakev1alpha1.WakeStepScheduled,
		napwakev1alpha1.WakeStepStarted, napwakev1alpha1.WakeStepReady, napwakev1alpha1.WakeStepRunning}
	if len(w.Steps) != len(order) {
		t.Fatalf("steps %+v (note %q), want %v", w.Steps, w.Note, order)
	}
	var sum int64
	for i, s := range w.Steps {
		if s.Name != order[i] {
			t.Errorf("step %d is %s, want %s", i, s.Name, order[i])
		}
		if s.Milliseconds < 0 || s.Milliseconds > w.TotalMilliseconds {
			t.Errorf("step %s took %d ms, not within the total %d ms", s.Name, s.Milliseconds, w.TotalMilliseconds)
		}
		sum += s.Milliseconds
	}
	if sum != w.TotalMilliseconds {
		t.Errorf("steps add up to %d ms, want the total %d ms", sum, w.TotalMilliseconds)
	}
	if w.Slowest != napwakev1alpha1.WakeStepReady || w.Steps[4].Milliseconds != 3000 {
		t.Errorf("slowest %s, ready %d ms; want ready, 3000 ms", w.Slowest, w.Steps[4].Milliseconds)
	}
	if want := "your readiness probe's first success came 3.0 s after the container started: lower `initialDelaySeconds` or `periodSeconds` (app: initialDelaySeconds 3, periodSeconds 5)"; w.Advice != want {
		t.Errorf("advice %q, want %q", w.Advice, want)
	}
	if w.Pod != pod.Name {
		t.Errorf("pod %q, want the wake's %s", w.Pod, pod.Name)
	}
	if w.Note != "" {
		t.Errorf("note %q, want every step known", w.Note)
	}

	f.wantEvent(napwakev1alpha1.EventRunning, "Running: a pod is Ready, 5.5 s after the request signal; slowest: ready, 3.0 s")

	// One observation per step per wake: reconciling Running again adds none.
	f.reconcile()
	for _, s := range order {
		var m dto.Metric
		must(t, f.metrics.WakeStepSeconds.WithLabelValues(string(s)).(prometheus.Metric).Write(&m))
		if n := m.GetHistogram().GetSampleCount(); n != 1 {
			t.Errorf("wake_step_seconds{step=%s} has %d observations, want 1", s, n)
		}
	}
}

func TestAWakeWithNoSignalTimeStartsItsTimelineNow(t *testing.T) {
	now := time.Date(2026, 10, 27, 14, 30, 0, 0, time.UTC)
	w := wakeBegun(decide.Step{Woken: napwakev1alpha1.SourceSchedule}, now)
	if !w.StartedAt.Time.Equal(now) || w.Source != napwakev1alpha1.SourceSchedule {
		t.Errorf("lastWake %+v, want it started now by the schedule", w)
	}
}

func TestWakeScalesKeepsAScaleForItsOwnWakeUntilForgotten(t *testing.T) {
	var w wakeScales
	key := types.NamespacedName{Namespace: "ns", Name: "api"}
	resumed := time.Date(2026, 10, 27, 14, 30, 0, 0, time.UTC)
	w.set(key, resumed, resumed.Add(60*time.Millisecond))
	if got := w.get(key, resumed.Add(time.Hour)); !got.IsZero() {
		t.Errorf("another wake's scale %v, want none", got)
	}
	// A Running write that failed asks again: the time is still there.
	for range 2 {
		if got := w.get(key, resumed); !got.Equal(resumed.Add(60 * time.Millisecond)) {
			t.Errorf("scale %v, want 60 ms after the wake began", got)
		}
	}
	w.forget(key)
	if got := w.get(key, resumed); !got.IsZero() {
		t.Errorf("scale %v after forget, want none", got)
	}
}

// The wake's signal read back from status.lastWake: a doorman stamp reads
// up to a second after the resumedAt the operator cut to the second (the
// local cluster's wakes did, and lost their first step).
func TestWakeSignalIsTheWakesOwnEvenADoormanSecondLate(t *testing.T) {
	resumed := time.Date(2026, 12, 7, 4, 28, 6, 0, time.UTC)
	begun := func(at time.Time, total int64) *napwakev1alpha1.LastWakeStatus {
		return &napwakev1alpha1.LastWakeStatus{StartedAt: metav1.NewTime(at), Source: napwakev1alpha1.SourceRequest, TotalMilliseconds: total}
	}
	for _, tc := range []struct {
		name string
		w    *napwakev1alpha1.LastWakeStatus
		ok   bool
	}{
		{"none recorded", nil, false},
		{"the signal before the wake", begun(resumed.Add(-2*time.Second), 0), true},
		{"the doorman's stamp a second late", begun(resumed.Add(time.Second), 0), true},
		{"a signal later than any clock explains", begun(resumed.Add(2*time.Second), 0), false},
		{"an earlier wake, complete", begun(resumed.Add(-time.Hour), 4200), false},
	} {
		at, ok := wakeSignal(tc.w, resumed)
		if ok != tc.ok || (ok && !at.Equal(tc.w.StartedAt.Time)) {
			t.Errorf("%s: wakeSignal = %v, %v; want ok %v", tc.name, at, ok, tc.ok)
		}
	}
}

// TestARequestsWakeWritesItsScaleBesideItsStatus: the wake a request
// begins writes its Resuming status and its scale at once, the scale from
// the Deployment as the reconcile read it, with no live read of the scale
// (docs/design/pause-wake.md#the-wakes-two-writes). The spy holds the
// status write until the scale's is seen: in a row, it would wait alone.
func TestARequestsWakeWritesItsScaleBesideItsStatus(t *testing.T) {
	f := newFixture(t, 3)
	f.runToRunning()
	f.pauseIt()
	spy := newWakeSpy(k8s)
	f.r = f.reconciler(spy)
	f.clock.Step(time.Minute)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastRequest, f.stamp())
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhaseResuming {
		t.Fatalf("phase %q, want Resuming", p)
	}
	if got := replicasOf(f.deployment().Spec.Replicas); got != 3 {
		t.Fatalf("replicas %d, want the saved 3", got)
	}
	if spy.alone.Load() {
		t.Error("the status write went alone: the scale was written only after it")
	}
	if n := spy.scaleReads.Load(); n != 0 {
		t.Errorf("the scale was read live %d times on the wake's path, want 0", n)
	}
	f.wantEvent(napwakev1alpha1.EventWaking, "request")
}

// TestAWakeFromAStaleReadScalesFromALiveOne: when the Deployment changed
// since the reconcile read it, the wake's first scale write is refused
// (its resourceVersion is old) and the wake reads the scale live and goes
// on in the same reconcile: to the saved count, or not at all when someone
// scaled it up further meanwhile.
func TestAWakeFromAStaleReadScalesFromALiveOne(t *testing.T) {
	for _, tc := range []struct {
		name         string
		other, want  int32
		otherReplica bool
	}{
		{name: "someone annotated it", want: 3},
		{name: "someone scaled it to 5", other: 5, want: 5, otherReplica: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 3)
			f.runToRunning()
			f.pauseIt()
			f.r.Client = &interferingClient{Client: k8s, before: func() {
				d := f.deployment()
				d.Annotations = map[string]string{"example.com/touched": "yes"}
				if tc.otherReplica {
					d.Spec.Replicas = ptr.To(tc.other)
				}
				must(t, k8s.Update(f.ctx, d))
			}}
			f.clock.Step(time.Minute)
			f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastRequest, f.stamp())
			f.reconcile()
			if got := replicasOf(f.deployment().Spec.Replicas); got != tc.want {
				t.Fatalf("replicas %d after one reconcile, want %d", got, tc.want)
			}
			if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhaseResuming {
				t.Fatalf("phase %q, want Resuming", p)
			}
		})
	}
}

// TestAPauseCalledOffIsRunningOnlyOnAPodThatStays calls a pause off by a
// request while the pod it scaled away is in its preStop: deleted, still
// Ready, still counted in the Deployment's status. The wake must scale
// back and wait for a pod that stays, with the routes kept, else callers
// are sent to a pod about to exit. The second case also reads the
// Deployment from a cache behind the pause's own scale to 0, which still
// shows the replica there.
func TestAPauseCalledOffIsRunningOnlyOnAPodThatStays(t *testing.T) {
	for _, tc := range []struct {
		name         string
		stale        bool
		staleNoReady bool
	}{
		{name: "the target's status still counts the leaving pod"},
		{name: "and a cache is behind the pause's scale to 0", stale: true},
		// The wake must read the replicas live as it begins, not wait
		// for a Ready pod of a scale the cache shows and nobody made.
		{name: "and a cache is behind, its pod not Ready yet", stale: true, staleNoReady: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 1)
			f.runToRunning()
			cached := f.deployment()
			if tc.staleNoReady {
				cached.Status.ReadyReplicas, cached.Status.AvailableReplicas = 0, 0
			}
			f.clock.Step(11 * time.Minute)
			f.reconcile() // Pausing: routed, scaled to 0
			if got := replicasOf(f.deployment().Spec.Replicas); got != 0 {
				t.Fatalf("replicas %d after the pause's first reconcile, want 0", got)
			}
			f.leaving()
			if tc.stale {
				f.r.Client = &staleClient{Client: k8s, stale: cached}
			}
			f.clock.Step(time.Second)
			f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastRequest, f.stamp())
			f.reconcile()
			if got := replicasOf(f.deployment().Spec.Replicas); got != 1 {
				t.Fatalf("replicas %d after the pause was called off, want its 1 back", got)
			}
			if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhaseResuming {
				t.Fatalf("phase %q with only a leaving pod Ready, want Resuming", p)
			}
			if f.router.unroutes != 0 {
				t.Fatalf("the routes were taken away %d times with no pod that stays Ready", f.router.unroutes)
			}

			f.r.Client = k8s
			p := podFor(f.ns)
			must(t, k8s.Create(f.ctx, p))
			setPodReady(f.ctx, t, p, true)
			f.reconcile()
			if ph := f.managedWorkload().Status.Phase; ph != napwakev1alpha1.PhaseRunning || f.router.unroutes != 1 {
				t.Fatalf("phase %q, %d unroutes once a new pod is Ready; want Running, 1", ph, f.router.unroutes)
			}
		})
	}
}

// leaving plays the kubelet running the preStop of the target's one pod:
// the pod is deleted and stays, Ready, until the test ends.
func (f *fixture) leaving() {
	f.t.Helper()
	var pods corev1.PodList
	must(f.t, k8s.List(f.ctx, &pods, client.InNamespace(f.ns), client.MatchingLabels{"app": "api"}))
	if len(pods.Items) != 1 {
		f.t.Fatalf("%d pods, want the 1 the pause is stopping", len(pods.Items))
	}
	p := &pods.Items[0]
	p.Finalizers = append(p.Finalizers, "napwake.dev/test-prestop")
	must(f.t, k8s.Update(f.ctx, p))
	must(f.t, k8s.Delete(f.ctx, p))
	f.t.Cleanup(func() {
		gone := &corev1.Pod{}
		if err := k8s.Get(f.ctx, client.ObjectKeyFromObject(p), gone); err == nil {
			gone.Finalizers = nil
			_ = k8s.Update(f.ctx, gone)
		}
	})
}
