package decide

import (
	"strings"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestNextWithDependents(t *testing.T) {
	pausedState, pausingState, resumingState := cycleStates()
	woke := Dependents{WokeAt: at(-time.Second), WokenBy: "p/front (through p/api)"}
	held := Dependents{Held: true}

	runNext(t, []nextCase{
		{
			name: "a dependent's wake after the pause began wakes a paused workload with source dependent, naming who",
			in:   Input{State: pausedState, Target: Target{Found: true}, Dependents: woke},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantWoken(t, s, napwakev1alpha1.SourceDependent)
				eq(t, s.State.LastActivity, at(-time.Second))
				if !strings.Contains(s.Event.Message, "woken by dependent p/front (through p/api)") {
					t.Errorf("event %q does not name who woke it", s.Event.Message)
				}
			},
		},
		{
			name:  "a dependent's wake from before the pause began wakes nothing",
			in:    Input{State: pausedState, Target: Target{Found: true}, Dependents: Dependents{WokeAt: at(-20 * time.Minute), WokenBy: "p/front"}},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Route) },
		},
		{
			name:  "a dependent's wake calls off a pause under way",
			in:    Input{State: pausingState, Target: up, Dependents: woke},
			check: calledOffBy(napwakev1alpha1.SourceDependent),
		},
		{
			name: "a dependent's wake does not overwrite the source of a Running workload's own activity",
			in:   Input{State: runningFor(-2 * time.Minute), Target: up, Dependents: Dependents{WokeAt: at(-time.Minute), WokenBy: "p/front"}},
			check: func(t *testing.T, s Step) {
				t.Helper()
				eq(t, s.Kind, Wait)
			},
		},
		{
			name: "a held workload past its idleAfter is not paused and its pauseAt is cleared",
			in:   Input{State: runningFor(-40 * time.Minute), Target: up, Dependents: held},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseRunning)
				eq(t, s.State.PauseAt.IsZero(), true)
				eq(t, s.State.LastActivity, at(-40*time.Minute))
			},
		},
		{
			name: "a held workload whose pauseAt is cleared waits until the hold may end",
			in: Input{State: func() State { s := runningFor(-40 * time.Minute); s.PauseAt = time.Time{}; return s }(),
				Target: up, Dependents: Dependents{Held: true, HeldUntil: at(3 * time.Minute)}},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait); eq(t, s.RequeueAfter, 3*time.Minute) },
		},
		{
			name: "once released, the idle clock counts from the release, not from the last activity",
			in: Input{State: func() State { s := runningFor(-40 * time.Minute); s.PauseAt = time.Time{}; return s }(),
				Target: up, Dependents: Dependents{ReleasedAt: at(-5 * time.Minute)}},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseRunning)
				eq(t, s.State.PauseAt, at(25*time.Minute))
				eq(t, s.State.LastActivity, at(-40*time.Minute))
			},
		},
		{
			name:  "a release older than the last activity changes nothing",
			in:    Input{State: runningFor(-10 * time.Minute), Target: up, Dependents: Dependents{ReleasedAt: at(-time.Hour)}},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait); eq(t, s.RequeueAfter, 20*time.Minute) },
		},
		{
			name:  "a release never wakes a paused workload",
			in:    Input{State: pausedState, Target: Target{Found: true}, Routed: true, Dependents: Dependents{ReleasedAt: at(-time.Second)}},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name: "a held workload that becomes Ready is Running with no pauseAt and no extra write",
			in:   Input{State: resumingState, Target: up, Unrouted: true, Dependents: held},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseRunning)
				eq(t, s.State.PauseAt.IsZero(), true)
			},
		},
		{
			name:  "a pause-requested still pauses a held workload: the user asked",
			in:    Input{State: runningFor(-time.Minute), Target: up, Dependents: held, Annotations: map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(0)}},
			check: func(t *testing.T, s Step) { t.Helper(); wantPatch(t, s, napwakev1alpha1.PhasePausing) },
		},
	})
}

// calledOffBy checks a step calls a pause off for source.
func calledOffBy(source string) func(t *testing.T, s Step) {
	return func(t *testing.T, s Step) {
		t.Helper()
		wantPatch(t, s, napwakev1alpha1.PhaseResuming)
		eq(t, s.Event.Reason, napwakev1alpha1.EventPauseCalledOff)
		eq(t, s.Woken, source)
	}
}
