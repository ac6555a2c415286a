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
	for cp := newCrashPoints(); cp.next(); {
		cp.failed(t.Run(cp.name(), func(t *testing.T) {
			f := newFixture(t, 3)
			crashing := &crashingClient{Client: k8s, budget: cp.n}
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
			cp.ran(t, crashing.writes, crashed)
		}))
	}
}

// crashPoints walks a crash test's budgets: -1 first (no crash, counting
// the writes a whole run makes), then each budget below that count.
type crashPoints struct {
	n, total int
	stop     bool
}

func newCrashPoints() *crashPoints { return &crashPoints{n: -2, total: -1} }

// next moves to the next budget; false once all were run, or the counting
// run failed.
func (c *crashPoints) next() bool {
	c.n++
	return !c.stop && (c.total < 0 || c.n < c.total)
}

func (c *crashPoints) name() string {
	if c.n < 0 {
		return "no crash, counting the writes"
	}
	return fmt.Sprintf("crash after %d writes", c.n)
}

// ran records what a run did: the writes it made and whether it crashed.
func (c *crashPoints) ran(t *testing.T, writes int, crashed bool) {
	t.Helper()
	switch {
	case c.total < 0:
		c.total = writes
		t.Logf("a whole run takes %d writes", writes)
	case !crashed:
		t.Fatalf("never crashed with a budget of %d of %d writes", c.n, c.total)
	}
}

// failed stops the walk if the counting run failed: no budget means anything.
func (c *crashPoints) failed(ok bool) { c.stop = !ok && c.total < 0 }

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
