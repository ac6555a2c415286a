package decide

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

var (
	t0      = time.Date(2026, 10, 23, 18, 0, 0, 0, time.UTC)
	created = t0.Add(-time.Hour)
)

func at(d time.Duration) time.Time { return t0.Add(d) }
func stamp(d time.Duration) string { return at(d).Format(time.RFC3339) }
func pause(start time.Duration, replicas int32, r napwakev1alpha1.PauseReason) *napwakev1alpha1.PauseStatus {
	return &napwakev1alpha1.PauseStatus{StartedAt: metav1.NewTime(at(start)), Replicas: replicas, Reason: r}
}

func runningFor(last time.Duration) State {
	return State{Phase: napwakev1alpha1.PhaseRunning, LastActivity: at(last), LastActivitySource: "created", PauseAt: at(last + 30*time.Minute)}
}

func withPhase(s State, p napwakev1alpha1.Phase, ps *napwakev1alpha1.PauseStatus) State {
	s.Phase, s.Pause, s.PauseAt = p, ps, time.Time{}
	return s
}

var up = Target{Found: true, Replicas: 2, StatusReplicas: 2, ReadyReplicas: 2}

// cycleStates are a workload Paused for 10 minutes, one Pausing for 10
// seconds and one Resuming for 5, each saving 2 replicas.
func cycleStates() (paused, pausing, resuming State) {
	paused = withPhase(runningFor(-time.Hour), napwakev1alpha1.PhasePaused, pause(-10*time.Minute, 2, napwakev1alpha1.PauseIdle))
	pausing = withPhase(runningFor(-time.Hour), napwakev1alpha1.PhasePausing, pause(-10*time.Second, 2, napwakev1alpha1.PauseIdle))
	resuming = paused
	resuming.Phase, resuming.ResumedAt = napwakev1alpha1.PhaseResuming, at(-5*time.Second)
	return paused, pausing, resuming
}

// nextCase is one table row of Next: a sentence, the input, the check.
type nextCase struct {
	name  string
	in    Input
	check func(t *testing.T, s Step)
}

// runNext runs each case at t0 plus sub-second noise, with the created
// time and a 30m idleAfter unless the case sets its own.
func runNext(t *testing.T, cases []nextCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = t0.Add(400 * time.Millisecond) // sub-second noise must not matter
			if tc.in.Created.IsZero() {
				tc.in.Created = created
			}
			if tc.in.IdleAfter == 0 {
				tc.in.IdleAfter = 30 * time.Minute
			}
			tc.check(t, Next(tc.in))
		})
	}
}

func TestNext(t *testing.T) {
	pausedState, pausingState, resumingState := cycleStates()
	zero := Target{Found: true}

	runNext(t, []nextCase{
		{
			name: "a new workload is Running from now with pauseAt idleAfter away",
			in:   Input{State: State{}, Target: up},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseRunning)
				eq(t, s.State.LastActivity, t0)
				eq(t, s.State.LastActivitySource, napwakev1alpha1.SourceCreated)
				eq(t, s.State.PauseAt, at(30*time.Minute))
			},
		},
		{
			name: "a new workload already at zero is taken as pausing with 0 replicas saved",
			in:   Input{State: State{}, Target: zero},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhasePausing)
				eq(t, s.State.Pause.Replicas, int32(0))
				eq(t, s.Paused, napwakev1alpha1.PauseIdle)
			},
		},
		{
			name:  "a Running workload within idleAfter waits until pauseAt",
			in:    Input{State: runningFor(-10 * time.Minute), Target: up},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait); eq(t, s.RequeueAfter, 20*time.Minute) },
		},
		{
			name: "a Running workload idle for idleAfter saves its replicas and starts pausing, scaling nothing yet",
			in:   Input{State: runningFor(-30 * time.Minute), Target: up},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhasePausing)
				eq(t, *s.State.Pause, *pause(0, 2, napwakev1alpha1.PauseIdle))
				eq(t, s.State.PauseAt.IsZero(), true)
				eq(t, s.Event.Reason, napwakev1alpha1.EventPausing)
				wantIn(t, s.Event.Message, "Idle")
			},
		},
		{
			name: "an activity annotation moves the idle clock and pauseAt",
			in:   Input{State: runningFor(-20 * time.Minute), Annotations: map[string]string{napwakev1alpha1.AnnotationLastActivity: stamp(-time.Minute)}, Target: up},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseRunning)
				eq(t, s.State.LastActivity, at(-time.Minute))
				eq(t, s.State.LastActivitySource, napwakev1alpha1.SourceAnnotation)
				eq(t, s.State.PauseAt, at(29*time.Minute))
			},
		},
		{
			name:  "an activity annotation already counted writes nothing",
			in:    Input{State: runningFor(-20 * time.Minute), Annotations: map[string]string{napwakev1alpha1.AnnotationLastActivity: stamp(-25 * time.Minute)}, Target: up},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name:  "an activity time far in the future is ignored",
			in:    Input{State: runningFor(-20 * time.Minute), Annotations: map[string]string{napwakev1alpha1.AnnotationLastActivity: stamp(2 * time.Minute)}, Target: up},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name:  "fractions of a second in an annotation are not new activity",
			in:    Input{State: runningFor(-time.Minute), Annotations: map[string]string{napwakev1alpha1.AnnotationLastActivity: at(-time.Minute + 300*time.Millisecond).Format(time.RFC3339Nano)}, Target: up},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name: "busy pods keep a workload from pausing",
			in:   Input{State: runningFor(-40 * time.Minute), Busy: true, Target: up},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseRunning)
				eq(t, s.State.LastActivitySource, napwakev1alpha1.SourceUsage)
			},
		},
		{
			name: "a Prometheus query above zero keeps a workload from pausing, named over busy pods",
			in:   Input{State: runningFor(-40 * time.Minute), Busy: true, QueryActive: true, Target: up},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseRunning)
				eq(t, s.State.LastActivitySource, napwakev1alpha1.SourcePrometheus)
				eq(t, s.State.LastActivity, at(0))
			},
		},
		{
			name: "pause-requested pauses now even while busy",
			in:   Input{State: runningFor(0), Busy: true, Annotations: map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(0)}, Target: up},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhasePausing)
				eq(t, s.State.Pause.Reason, napwakev1alpha1.PauseRequested)
			},
		},
		{
			name: "pause-requested no newer than the last pause is already handled",
			in: Input{State: func() State {
				s := runningFor(-time.Minute)
				s.Pause = pause(-2*time.Minute, 2, napwakev1alpha1.PauseRequested)
				return s
			}(),
				Annotations: map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(-2 * time.Minute)}, Target: up},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name: "pause-requested no newer than the last wake is already handled",
			in: Input{State: func() State { s := runningFor(-time.Minute); s.ResumedAt = at(-time.Minute); return s }(),
				Annotations: map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(-2 * time.Minute)}, Target: up},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name:  "pause-requested older than the ManagedWorkload is left over and ignored",
			in:    Input{State: runningFor(0), Annotations: map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(-2 * time.Hour)}, Target: up},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			// Annotation times count to the second: a request written in the
			// second the ManagedWorkload was made is not left over.
			name: "pause-requested in the second the ManagedWorkload was made pauses",
			in: Input{State: runningFor(0), Annotations: map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(-time.Hour)}, Target: up,
				Created: created.Add(400 * time.Millisecond)},
			check: func(t *testing.T, s Step) { t.Helper(); wantPatch(t, s, napwakev1alpha1.PhasePausing) },
		},
		{
			name:  "Pausing with replicas still up routes to the doorman first",
			in:    Input{State: pausingState, Target: up},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Route) },
		},
		{
			name:  "Pausing with replicas still up, once routed, scales to zero",
			in:    Input{State: pausingState, Target: up, Routed: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Scale); eq(t, s.Replicas, int32(0)) },
		},
		{
			// A NEG forwarder starting: scaling now would leave the Service
			// with no endpoint at all until its pods are Ready.
			name:  "Pausing, routed, with the route still coming keeps the pods up and looks again soon",
			in:    Input{State: pausingState, Target: up, Routed: true, RouteComing: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait); eq(t, s.RequeueAfter, RouteComingRecheck) },
		},
		{
			name: "Pausing with the route still coming past RouteWait scales to zero anyway",
			in: Input{State: withPhase(runningFor(-time.Hour), napwakev1alpha1.PhasePausing, pause(-RouteWait, 2, napwakev1alpha1.PauseIdle)),
				Target: up, Routed: true, RouteComing: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Scale); eq(t, s.Replicas, int32(0)) },
		},
		{
			name:  "Pausing with the route coming is routed again first",
			in:    Input{State: pausingState, Target: up, RouteComing: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Route) },
		},
		{
			name: "Pausing and someone set other replicas: that count is saved before scaling",
			in:   Input{State: pausingState, Target: Target{Found: true, Replicas: 5, StatusReplicas: 2}},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhasePausing)
				eq(t, s.State.Pause.Replicas, int32(5))
			},
		},
		{
			name:  "Pausing with pods still terminating keeps the routes current first",
			in:    Input{State: pausingState, Target: Target{Found: true, PodsLeft: true}},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Route) },
		},
		{
			name:  "Pausing with pods still terminating, once routed, waits",
			in:    Input{State: pausingState, Target: Target{Found: true, PodsLeft: true}, Routed: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait); eq(t, s.RequeueAfter, PodsGoneRecheck) },
		},
		{
			name:  "Pausing while the controller still counts pods waits",
			in:    Input{State: pausingState, Target: Target{Found: true, StatusReplicas: 1}, Routed: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name: "Pausing with no pod left is Paused, routed or not",
			in:   Input{State: pausingState, Target: zero},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhasePaused)
				eq(t, s.Event.Reason, napwakev1alpha1.EventPaused)
			},
		},
		{
			name: "a request during Pausing calls the pause off",
			in:   Input{State: pausingState, Annotations: map[string]string{napwakev1alpha1.AnnotationLastRequest: stamp(0)}, Target: Target{Found: true, StatusReplicas: 2, ReadyReplicas: 1}},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseResuming)
				eq(t, s.Event.Reason, napwakev1alpha1.EventPauseCalledOff)
				eq(t, s.Woken, napwakev1alpha1.SourceRequest)
				eq(t, s.State.LastActivitySource, napwakev1alpha1.SourceRequest)
			},
		},
		{
			name:  "busy pods during Pausing do not call it off: they are shutting down",
			in:    Input{State: pausingState, Busy: true, Target: up, Routed: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Scale) },
		},
		{
			name: "a Prometheus query above zero during Pausing calls the pause off: there is work for it",
			in:   Input{State: pausingState, QueryActive: true, Target: up},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseResuming)
				eq(t, s.Event.Reason, napwakev1alpha1.EventPauseCalledOff)
				eq(t, s.Woken, napwakev1alpha1.SourcePrometheus)
			},
		},
		{
			name: "a Prometheus query above zero wakes a Paused workload, as for a queue worker",
			in:   Input{State: pausedState, QueryActive: true, Target: zero},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantWake(t, s, napwakev1alpha1.SourcePrometheus)
				eq(t, s.PausedFor, 10*time.Minute)
			},
		},
		{
			name:  "a Paused workload with nothing new makes its routes afresh",
			in:    Input{State: pausedState, Annotations: map[string]string{napwakev1alpha1.AnnotationLastRequest: stamp(-20 * time.Minute)}, Target: zero},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Route) },
		},
		{
			name:  "a Paused workload with nothing new, once routed, waits",
			in:    Input{State: pausedState, Annotations: map[string]string{napwakev1alpha1.AnnotationLastRequest: stamp(-20 * time.Minute)}, Target: zero, Routed: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name: "a request newer than the pause wakes it",
			in:   Input{State: pausedState, Annotations: map[string]string{napwakev1alpha1.AnnotationLastRequest: stamp(-time.Second)}, Target: zero},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantWake(t, s, napwakev1alpha1.SourceRequest)
				eq(t, s.State.LastActivity, at(-time.Second))
				eq(t, s.PausedFor, 10*time.Minute)
			},
		},
		{
			name: "a request in the pause's own second wakes it, though the pause began later in that second",
			in: Input{State: withPhase(runningFor(-time.Hour), napwakev1alpha1.PhasePaused, pause(-10*time.Minute, 2, napwakev1alpha1.PauseIdle)),
				Annotations: map[string]string{napwakev1alpha1.AnnotationLastRequest: at(-10*time.Minute + 300*time.Millisecond).Format(time.RFC3339Nano)}, Target: zero},
			check: func(t *testing.T, s Step) { t.Helper(); wantWake(t, s, napwakev1alpha1.SourceRequest) },
		},
		{
			name: "a request in the pause's own second calls a pause under way off",
			in: Input{State: pausingState,
				Annotations: map[string]string{napwakev1alpha1.AnnotationLastRequest: at(-10*time.Second + 999*time.Millisecond).Format(time.RFC3339Nano)}, Target: up},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseResuming)
				eq(t, s.Event.Reason, napwakev1alpha1.EventPauseCalledOff)
			},
		},
		{
			name:  "a request the second before the pause began does not wake it",
			in:    Input{State: pausedState, Annotations: map[string]string{napwakev1alpha1.AnnotationLastRequest: at(-10*time.Minute - 1*time.Millisecond).Format(time.RFC3339Nano)}, Target: zero, Routed: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name:  "an activity annotation newer than the pause wakes it",
			in:    Input{State: pausedState, Annotations: map[string]string{napwakev1alpha1.AnnotationLastActivity: stamp(0)}, Target: zero},
			check: func(t *testing.T, s Step) { t.Helper(); wantWake(t, s, napwakev1alpha1.SourceAnnotation) },
		},
		{
			name:  "wake-requested newer than the pause wakes it",
			in:    Input{State: pausedState, Annotations: map[string]string{napwakev1alpha1.AnnotationWakeRequested: stamp(0)}, Target: zero},
			check: func(t *testing.T, s Step) { t.Helper(); wantWake(t, s, napwakev1alpha1.SourceWakeRequested) },
		},
		{
			name: "someone else scaling a Paused target up wakes it, source scaled",
			in:   Input{State: pausedState, Target: Target{Found: true, Replicas: 1}},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantWake(t, s, napwakev1alpha1.SourceScaled)
				eq(t, s.State.LastActivity, t0)
				eq(t, s.WokenAt, t0) // the wake's timeline starts at the signal
			},
		},
		{
			name:  "Resuming scales to the saved replicas",
			in:    Input{State: resumingState, Target: zero},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Scale); eq(t, s.Replicas, int32(2)) },
		},
		{
			name: "Resuming a pause that saved 0 replicas scales to 1",
			in: Input{State: withPhase(resumingState, napwakev1alpha1.PhaseResuming, pause(-10*time.Minute, 0, napwakev1alpha1.PauseIdle)),
				Target: zero},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Scale); eq(t, s.Replicas, int32(1)) },
		},
		{
			name:  "Resuming never scales down what someone scaled up further",
			in:    Input{State: resumingState, Target: Target{Found: true, Replicas: 4}},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait); eq(t, s.RequeueAfter, ReadyRecheck) },
		},
		{
			name:  "Resuming with a Ready pod takes the routes away first",
			in:    Input{State: resumingState, Target: Target{Found: true, Replicas: 2, StatusReplicas: 2, ReadyReplicas: 1}},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Unroute) },
		},
		{
			name:  "Resuming with no Ready pod keeps its routes",
			in:    Input{State: resumingState, Target: Target{Found: true, Replicas: 2, StatusReplicas: 2}},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name: "Resuming with a Ready pod, once unrouted, is Running with a fresh idle clock",
			in:   Input{State: resumingState, Target: Target{Found: true, Replicas: 2, StatusReplicas: 2, ReadyReplicas: 1}, Unrouted: true},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseRunning)
				eq(t, s.ResumeTook, 5*time.Second)
				eq(t, s.State.PauseAt, at(30*time.Minute))
				eq(t, s.Event.Reason, napwakev1alpha1.EventRunning)
			},
		},
		{
			name: "pause-requested during Resuming pauses again",
			in:   Input{State: resumingState, Annotations: map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(0)}, Target: Target{Found: true, Replicas: 2}},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhasePausing)
				eq(t, s.State.Pause.Replicas, int32(2))
			},
		},
		{
			name:  "a missing target is waited on",
			in:    Input{State: pausedState, Annotations: map[string]string{napwakev1alpha1.AnnotationWakeRequested: stamp(0)}},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
	})
}

func TestRestore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		st       State
		t        Target
		replicas int32
		needed   bool
	}{
		{"a Running workload needs nothing", runningFor(0), up, 0, false},
		{"a Paused workload gets its saved replicas back", withPhase(runningFor(0), napwakev1alpha1.PhasePaused, pause(0, 3, napwakev1alpha1.PauseIdle)), Target{Found: true}, 3, true},
		{"a Pausing workload not yet scaled needs nothing", withPhase(runningFor(0), napwakev1alpha1.PhasePausing, pause(0, 3, napwakev1alpha1.PauseIdle)), Target{Found: true, Replicas: 3}, 3, false},
		{"a pause that saved 0 restores 1", withPhase(runningFor(0), napwakev1alpha1.PhasePaused, pause(0, 0, napwakev1alpha1.PauseIdle)), Target{Found: true}, 1, true},
		{"a missing target needs nothing", withPhase(runningFor(0), napwakev1alpha1.PhasePaused, pause(0, 3, napwakev1alpha1.PauseIdle)), Target{}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, n := Restore(tc.st, tc.t)
			eq(t, r, tc.replicas)
			eq(t, n, tc.needed)
		})
	}
}

func TestMergeAnnotationsTakesTheLaterTime(t *testing.T) {
	got := MergeAnnotations(
		map[string]string{napwakev1alpha1.AnnotationLastActivity: stamp(0), napwakev1alpha1.AnnotationWakeRequested: stamp(0), "other": "x"},
		map[string]string{napwakev1alpha1.AnnotationLastActivity: stamp(time.Minute), napwakev1alpha1.AnnotationWakeRequested: "garbage", napwakev1alpha1.AnnotationPauseRequested: stamp(0)},
	)
	eqMap(t, got, map[string]string{
		napwakev1alpha1.AnnotationLastActivity:   stamp(time.Minute),
		napwakev1alpha1.AnnotationWakeRequested:  stamp(0),
		napwakev1alpha1.AnnotationPauseRequested: stamp(0),
	})
}

func TestMergeAnnotationsTakesLastRequestOnlyFromTheManagedWorkload(t *testing.T) {
	forged := MergeAnnotations(nil, map[string]string{napwakev1alpha1.AnnotationLastRequest: stamp(time.Minute)})
	eqMap(t, forged, map[string]string{})
	got := MergeAnnotations(
		map[string]string{napwakev1alpha1.AnnotationLastRequest: stamp(0)},
		map[string]string{napwakev1alpha1.AnnotationLastRequest: stamp(time.Minute)},
	)
	eqMap(t, got, map[string]string{napwakev1alpha1.AnnotationLastRequest: stamp(0)})
}

func eqMap(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		eq(t, got[k], v)
	}
}

func wantPatch(t *testing.T, s Step, phase napwakev1alpha1.Phase) {
	t.Helper()
	if s.Kind != PatchStatus || s.State.Phase != phase {
		t.Fatalf("got step %d to phase %q, want a status patch to %q", s.Kind, s.State.Phase, phase)
	}
}

func wantWake(t *testing.T, s Step, source string) {
	t.Helper()
	wantPatch(t, s, napwakev1alpha1.PhaseResuming)
	eq(t, s.Woken, source)
	eq(t, s.State.LastActivitySource, source)
	eq(t, s.State.ResumedAt, t0)
	eq(t, s.Event.Reason, napwakev1alpha1.EventWaking)
	wantIn(t, s.Event.Message, source)
}

func wantIn(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q does not contain %q", s, sub)
	}
}

func eq[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestAWakeWhoseSignalStaysScalesBesideItsStatus: a wake by a request's
// stamp, last-activity or wake-requested, each read again from the
// ManagedWorkload's annotations by the next reconcile, carries its scale (ScaleAlong) so the reconciler writes
// both at once; a wake by anything else, or one whose target is already
// up, does not.
func TestAWakeWhoseSignalStaysScalesBesideItsStatus(t *testing.T) {
	pausedState, pausingState, _ := cycleStates()
	zero := Target{Found: true}
	ann := func(k string) map[string]string { return map[string]string{k: stamp(0)} }
	along := func(want int32) func(t *testing.T, s Step) {
		return func(t *testing.T, s Step) {
			t.Helper()
			wantPatch(t, s, napwakev1alpha1.PhaseResuming)
			eq(t, s.ScaleAlong, want)
		}
	}
	runNext(t, []nextCase{
		{name: "a request wakes a Paused workload with its scale along", in: Input{State: pausedState, Annotations: ann(napwakev1alpha1.AnnotationLastRequest), Target: zero}, check: along(2)},
		{name: "wake-requested, too", in: Input{State: pausedState, Annotations: ann(napwakev1alpha1.AnnotationWakeRequested), Target: zero}, check: along(2)},
		{name: "a request calling off a pause already at 0, too", in: Input{State: pausingState, Annotations: ann(napwakev1alpha1.AnnotationLastRequest), Target: zero}, check: along(2)},
		{name: "not a request calling off a pause still up", in: Input{State: pausingState, Annotations: ann(napwakev1alpha1.AnnotationLastRequest), Target: up}, check: along(0)},
		{name: "last-activity, too", in: Input{State: pausedState, Annotations: ann(napwakev1alpha1.AnnotationLastActivity), Target: zero}, check: along(2)},
		{name: "not a Prometheus query: its answer is not kept", in: Input{State: pausedState, QueryActive: true, Target: zero}, check: along(0)},
		{name: "not someone else's scale: it is the scale", in: Input{State: pausedState, Target: up}, check: along(0)},
	})
}
