package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// TestNothingIsLostWhenTheOperatorDiesAfterAnyWrite runs a whole pause and
// wake, letting the operator make only n API writes before it "dies" (every
// later write fails and is not made), for every n up to the number of writes
// the cycle takes. A fresh reconciler then carries on, as a restarted
// operator would. At the moment of the crash the workload must never be at
// zero replicas without a persisted pause naming its 3 replicas (else nothing
// could wake it), and every run must end Running with exactly 3 replicas.
func TestNothingIsLostWhenTheOperatorDiesAfterAnyWrite(t *testing.T) {
	total := -1
	for n := -1; n < total || total < 0; n++ {
		name := fmt.Sprintf("crash after %d writes", n)
		if n < 0 {
			name = "no crash, counting the writes"
		}
		ok := t.Run(name, func(t *testing.T) {
			f := newFixture(t, 3)
			budget := n // -1: no crash
			crashing := &crashingClient{Client: k8s, budget: budget}
			f.r = f.reconciler(crashing)
			crashed := false
			step := func() {
				t.Helper()
				_, err := f.r.Reconcile(f.ctx, reqFor(f))
				switch {
				case errors.Is(err, errCrash) && !crashed:
					crashed = true
					f.checkWakeable()
					f.r = f.reconciler(k8s) // restarted
				case err != nil:
					t.Fatalf("Reconcile: %v", err)
				}
				f.followSpec()
			}
			until := func(phase napwakev1alpha1.Phase) {
				t.Helper()
				for i := 0; i < 8 && f.managedWorkload().Status.Phase != phase; i++ {
					step()
				}
				if p := f.managedWorkload().Status.Phase; p != phase {
					t.Fatalf("phase %q, want %q", p, phase)
				}
			}
			until(napwakev1alpha1.PhaseRunning)
			f.clock.Step(11 * time.Minute)
			until(napwakev1alpha1.PhasePaused)
			f.checkWakeable()
			f.clock.Step(time.Minute)
			f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
			until(napwakev1alpha1.PhaseRunning)
			if got := replicasOf(f.deployment().Spec.Replicas); got != 3 {
				t.Fatalf("ended with %d replicas, want 3", got)
			}
			if total < 0 {
				total = crashing.writes
				t.Logf("a whole pause and wake takes %d writes", total)
			} else if !crashed {
				t.Fatalf("never crashed with a budget of %d of %d writes", n, total)
			}
		})
		if !ok && total < 0 {
			return
		}
	}
}

// checkWakeable fails unless a target at 0 replicas has a persisted pause
// saving its 3 replicas, in a phase a wake acts on.
func (f *fixture) checkWakeable() {
	f.t.Helper()
	if replicasOf(f.deployment().Spec.Replicas) != 0 {
		return
	}
	mw := f.managedWorkload()
	p := mw.Status.Pause
	if p == nil || p.Replicas != 3 || (mw.Status.Phase != napwakev1alpha1.PhasePausing && mw.Status.Phase != napwakev1alpha1.PhasePaused && mw.Status.Phase != napwakev1alpha1.PhaseResuming) {
		f.t.Fatalf("at 0 replicas with status %+v: nothing would wake it to 3", mw.Status)
	}
}
