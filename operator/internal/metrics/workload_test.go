package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// The per-workload collector's bookkeeping on a fake client; the
// controller's envtest (workloadmetrics_test.go) covers it after real
// reconciles.

func TestTurnedAwaySumsEveryPauseAndNeverGoesDown(t *testing.T) {
	var tl workloadTally
	pause := func(at time.Time, n int64) *napwakev1alpha1.TurnedAwayStatus {
		return &napwakev1alpha1.TurnedAwayStatus{PausedAt: metav1.NewTime(at), Requests: n}
	}
	for _, step := range []struct {
		name   string
		status *napwakev1alpha1.TurnedAwayStatus
		want   float64
	}{
		{"none yet", nil, 0},
		{"the first pause's count", pause(t0, 3), 3},
		{"it grows", pause(t0, 7), 7},
		{"a stale read of the same pause", pause(t0, 6), 7},
		{"awake: the last pause's count stays in status", pause(t0, 7), 7},
		{"a new pause adds its count whole", pause(t0.Add(time.Hour), 2), 9},
		{"and its growth", pause(t0.Add(time.Hour), 4), 11},
	} {
		if got := tl.turnedAwayTotal(step.status); got != step.want {
			t.Fatalf("%s: %v, want %v", step.name, got, step.want)
		}
	}
}

func TestTurnedAwayAfterARestartCountsOnlyWhatComesAfter(t *testing.T) {
	var tl workloadTally
	last := &napwakev1alpha1.TurnedAwayStatus{PausedAt: metav1.NewTime(t0), Requests: 40}
	if got := tl.turnedAwayTotal(last); got != 0 {
		t.Fatalf("first sight of a pause that turned 40 away: %v, want 0 (they were counted before the restart)", got)
	}
	last.Requests = 43
	if got := tl.turnedAwayTotal(last); got != 3 {
		t.Fatalf("3 more: %v, want 3", got)
	}
}

func TestSavedSoFarCountsThePauseUnderWayInWholeSeconds(t *testing.T) {
	mw := pausedMW("api", napwakev1alpha1.PhasePaused, 3)
	mw.Status.Savings = &napwakev1alpha1.SavingsStatus{PausedReplicaSeconds: 100}
	if got := savedSoFar(mw, t0.Add(10*time.Second+900*time.Millisecond)); got != 130 {
		t.Fatalf("paused: %v, want 100 + 3×10", got)
	}
	mw.Status.Phase = napwakev1alpha1.PhaseResuming
	if got := savedSoFar(mw, t0.Add(time.Hour)); got != 100 {
		t.Fatalf("resuming: %v, want status.savings alone", got)
	}
}

func TestWorkloadSeriesWaitForTheLeaseAndGoWithTheirWorkload(t *testing.T) {
	f := newSavedFixture(t, pausedMW("api", napwakev1alpha1.PhasePaused, 3), pausedMW("web", napwakev1alpha1.PhaseRunning, 1))
	elected := make(chan struct{})
	f.m.Workloads.OnlyWhenElected(elected)
	if n := testutil.CollectAndCount(f.m.Workloads); n != 0 {
		t.Fatalf("%d series before the lease was won, want none", n)
	}
	close(elected)
	f.m.RecordWake(napwakev1alpha1.SourceRequest, PauseOf(pausedMW("api", napwakev1alpha1.PhasePaused, 3)), 3, time.Minute)
	// Two workloads: 4 phases, cold starts, turned away, saved each.
	if n := testutil.CollectAndCount(f.m.Workloads); n != 2*7 {
		t.Fatalf("%d series, want 14", n)
	}
	if err := f.c.Delete(t.Context(), pausedMW("api", napwakev1alpha1.PhasePaused, 3)); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(f.m.Workloads); n != 7 {
		t.Fatalf("%d series after deleting one, want 7", n)
	}
	if _, ok := f.m.Workloads.byUID["api-uid"]; ok {
		t.Fatal("the deleted workload's tally is kept")
	}
}
