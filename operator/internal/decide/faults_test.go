package decide

import (
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// A wake whose route removal failed goes on to Running (the removal never
// holds a wake up); the routes it left in status are taken down by the
// next reconcile of the Running workload, not left until the next pause.
func TestRoutesLeftWhileRunning(t *testing.T) {
	running := runningFor(-time.Minute)
	runNext(t, []nextCase{
		{
			name:  "a Running workload whose status still names routes takes them down first",
			in:    Input{State: running, Target: up, RoutesLeft: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Unroute) },
		},
		{
			name:  "once asked in this reconcile, it goes on and waits for pauseAt",
			in:    Input{State: running, Target: up, RoutesLeft: true, Unrouted: true},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait); eq(t, s.RequeueAfter, 29*time.Minute) },
		},
		{
			name:  "a Running workload with no routes left waits for pauseAt",
			in:    Input{State: running, Target: up},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait) },
		},
		{
			name:  "a Running workload due to pause with routes left pauses: its pause routes afresh",
			in:    Input{State: runningFor(-31 * time.Minute), Target: up, RoutesLeft: true},
			check: pausesSaving(2),
		},
	})
}

// A pause requested while a wake is under way, before its scale-up was
// made (the operator died, or the scale write failed, after Resuming was
// written), must save the count the wake is restoring, not the target's 0:
// else that count is lost and the next wake brings back 1 replica.
func TestAPauseRequestedBeforeAWakeScaledUpKeepsTheCount(t *testing.T) {
	_, _, resuming := cycleStates()
	req := map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(0)}
	runNext(t, []nextCase{
		{
			name:  "Resuming at 0 replicas, a pause request saves the 2 the wake restores",
			in:    Input{State: resuming, Annotations: req, Target: Target{Found: true}},
			check: pausesSaving(2),
		},
		{
			name:  "Resuming, scaled up further by someone, a pause request saves their 5",
			in:    Input{State: resuming, Annotations: req, Target: Target{Found: true, Replicas: 5}},
			check: pausesSaving(5),
		},
	})
}

// pausesSaving checks the step persists a pause saving n replicas.
func pausesSaving(n int32) func(t *testing.T, s Step) {
	return func(t *testing.T, s Step) {
		t.Helper()
		wantPatch(t, s, napwakev1alpha1.PhasePausing)
		eq(t, s.State.Pause.Replicas, n)
	}
}
