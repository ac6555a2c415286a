package controller

import (
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// TestEachEndedPauseAddsWhatItSavedToStatus: the wake's own status write
// records replicas × pause length, once, and a second pause adds to it.
func TestEachEndedPauseAddsWhatItSavedToStatus(t *testing.T) {
	f := newFixture(t, 2)
	f.runToRunning()
	if s := f.managedWorkload().Status.Savings; s != nil {
		t.Fatalf("savings %+v before any pause, want none", s)
	}
	wakeAfter := func(paused time.Duration) *napwakev1alpha1.SavingsStatus {
		t.Helper()
		f.pauseIt()
		f.clock.Step(paused)
		f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
		f.reconcile()
		mw := f.managedWorkload()
		if mw.Status.Phase != napwakev1alpha1.PhaseResuming && mw.Status.Phase != napwakev1alpha1.PhaseRunning {
			t.Fatalf("phase %q after the wake, want Resuming or Running", mw.Status.Phase)
		}
		f.followSpec()
		f.reconcile()
		return f.managedWorkload().Status.Savings
	}
	// pauseIt starts the pause and reaches Paused in the same instant, so
	// the pause lasts exactly what the clock is stepped by.
	first := wakeAfter(time.Hour)
	if first == nil || first.PausedReplicaSeconds != 2*3600 || first.Pauses != 1 || first.Since == nil {
		t.Fatalf("savings %+v after a 1h pause of 2 replicas, want 7200 replica-seconds over 1 pause", first)
	}
	second := wakeAfter(30 * time.Minute)
	if second == nil || second.PausedReplicaSeconds != 2*3600+2*1800 || second.Pauses != 2 || !second.Since.Equal(first.Since) {
		t.Fatalf("savings %+v after a second, 30m pause, want 10800 replica-seconds over 2 pauses since %s", second, first.Since)
	}
}
