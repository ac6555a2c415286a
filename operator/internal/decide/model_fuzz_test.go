package decide

import (
	"fmt"
	"strings"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// model is a tiny API server and cluster around Next: the persisted state,
// the target's spec and pods, the acting annotations and whether routes are
// up, changed only by the operator's steps and the events of a fuzzed
// sequence. want is the replica count a wake must be able to restore: the
// target's count whenever it is above 0, or 0 once someone else scaled it
// there.
type model struct {
	now    time.Time
	st     State
	tg     Target
	ann    map[string]string
	routes bool
	want   int32
	log    []string
}

// Events of the sequence, one byte each (the byte modulo the count); some
// read one more byte.
const (
	evRequest   = iota // a request reached the doorman: last-request
	evActivity         // last-activity
	evWake             // wake-requested
	evPause            // pause-requested
	evTime             // time passes, by the next byte's pick of steps
	evScaled           // someone scales the target, to the next byte mod 6
	evFollow           // the Deployment controller and kubelet catch up
	evReconcile        // a whole reconcile
	evCrash            // a reconcile whose k-th write (next byte) is not made, and the operator dies there
	eventKinds
)

var timeSteps = []time.Duration{time.Second, 10 * time.Second, time.Minute, 11 * time.Minute, 31 * time.Minute, 2 * time.Hour}

// reconcile takes Next's steps as the reconciler does, until a Wait or 8
// steps; with crashAt >= 0 the step of that index is not made and the
// reconcile ends. It returns whether it ended in a Wait.
func (m *model) reconcile(t *testing.T, crashAt int) bool {
	t.Helper()
	var routed, unrouted bool
	for i := range maxSteps {
		s := Next(Input{
			Now: m.now, Created: created, State: m.st, IdleAfter: 30 * time.Minute, Annotations: m.ann,
			Target: m.tg, Routed: routed, Unrouted: unrouted, RoutesLeft: m.routes,
		})
		m.log = append(m.log, fmt.Sprintf("  %s %s", s.Kind, m.st.Phase))
		if i == crashAt {
			m.log = append(m.log, "  crash: not made")
			return false
		}
		switch s.Kind {
		case Wait:
			return true
		case PatchStatus:
			m.st = s.State
		case Route:
			routed, m.routes = true, true
		case Unroute:
			unrouted, m.routes = true, false
		case Scale:
			if s.Replicas == 0 && !routed {
				t.Fatalf("scaled to 0 before routing in this reconcile\n%s", m.trace())
			}
			m.tg.Replicas = s.Replicas
		}
		m.setWant()
		m.check(t)
	}
	return false
}

const maxSteps = 8

func (m *model) setWant() {
	if m.tg.Replicas > 0 {
		m.want = m.tg.Replicas
	}
}

// check fails unless the count to restore is safe: a target at 0 that had
// more has a persisted pause saving that count, in a phase a wake acts on.
func (m *model) check(t *testing.T) {
	t.Helper()
	if m.tg.Replicas != 0 || m.want == 0 {
		return
	}
	p := m.st.Pause
	if p == nil || p.Replicas != m.want || (m.st.Phase != napwakev1alpha1.PhasePausing && m.st.Phase != napwakev1alpha1.PhasePaused && m.st.Phase != napwakev1alpha1.PhaseResuming) {
		t.Fatalf("at 0 replicas with %d to restore and %+v persisted\n%s", m.want, m.st, m.trace())
	}
}

func (m *model) trace() string { return strings.Join(m.log, "\n") }

// FuzzTheCycleNeverLosesTheReplicasToRestore feeds any sequence of events
// (requests, activity, wake and pause requests, time passing, the target
// scaled by someone else, the cluster catching up, reconciles, and
// reconciles in which the operator dies after any step, that step's write
// not made) to Next and the model. What must never happen: the target at 0
// replicas, having had more, without a persisted pause saving that count
// in Pausing, Paused or Resuming; a scale to 0 before the routes in that
// reconcile; a Running workload left with routes after a whole reconcile;
// a reconcile that never reaches a Wait. And a sequence ends, after a wake
// request and reconciles with the cluster keeping up, Running, with the
// count it had (at least 1) unless someone scaled it to 0 themselves.
func FuzzTheCycleNeverLosesTheReplicasToRestore(f *testing.F) {
	f.Add([]byte{evReconcile, evTime, 4, evReconcile, evFollow, evReconcile, evRequest, evReconcile, evFollow, evReconcile})
	f.Add([]byte{evReconcile, evTime, 4, evCrash, 1, evCrash, 2, evFollow, evCrash, 0, evReconcile, evTime, 2, evWake, evCrash, 1, evFollow, evCrash, 0})
	f.Add([]byte{evReconcile, evPause, evCrash, 0, evScaled, 5, evReconcile, evFollow, evReconcile, evScaled, 0, evReconcile})
	f.Add([]byte{evReconcile, evTime, 4, evReconcile, evRequest, evReconcile, evScaled, 2, evCrash, 2, evFollow, evReconcile, evTime, 3, evActivity, evReconcile})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			return // long enough to reach every phase many times
		}
		m := &model{now: t0, tg: Target{Found: true, Replicas: 3, StatusReplicas: 3, ReadyReplicas: 3}, ann: map[string]string{}, want: 3}
		arg := func(i *int) int {
			*i++
			if *i < len(ops) {
				return int(ops[*i])
			}
			return 0
		}
		for i := 0; i < len(ops); i++ {
			m.log = append(m.log, fmt.Sprintf("event %d", int(ops[i])%eventKinds))
			switch int(ops[i]) % eventKinds {
			case evRequest, evActivity, evWake, evPause:
				key := []string{napwakev1alpha1.AnnotationLastRequest, napwakev1alpha1.AnnotationLastActivity, napwakev1alpha1.AnnotationWakeRequested, napwakev1alpha1.AnnotationPauseRequested}[int(ops[i])%eventKinds]
				m.ann[key] = m.now.Format(time.RFC3339Nano)
			case evTime:
				m.now = m.now.Add(timeSteps[arg(&i)%len(timeSteps)])
			case evScaled:
				m.tg.Replicas = int32(arg(&i) % 6)
				m.want = m.tg.Replicas
			case evFollow:
				m.follow()
			case evReconcile:
				if !m.reconcile(t, -1) {
					t.Fatalf("a reconcile took %d steps without a Wait\n%s", maxSteps, m.trace())
				}
				if m.st.Phase == napwakev1alpha1.PhaseRunning && m.routes {
					t.Fatalf("Running with routes left after a whole reconcile\n%s", m.trace())
				}
			case evCrash:
				m.reconcile(t, arg(&i)%maxSteps)
			}
			m.check(t)
		}
		m.finish(t)
	})
}

// follow has the pods catch up with the target's spec, all Ready.
func (m *model) follow() {
	m.tg.StatusReplicas, m.tg.ReadyReplicas, m.tg.PodsLeft = m.tg.Replicas, m.tg.Replicas, m.tg.Replicas > 0
}

// finish wakes the workload and lets the cluster keep up: it must end
// Running with the count to restore.
func (m *model) finish(t *testing.T) {
	t.Helper()
	m.now = m.now.Add(time.Minute)
	m.ann[napwakev1alpha1.AnnotationWakeRequested] = m.now.Format(time.RFC3339Nano)
	for range 6 {
		m.follow()
		m.reconcile(t, -1)
		m.check(t)
	}
	if m.st.Phase != napwakev1alpha1.PhaseRunning {
		t.Fatalf("ended %q after a wake request, want Running\n%s", m.st.Phase, m.trace())
	}
	if m.want > 0 && m.tg.Replicas < m.want {
		t.Fatalf("ended Running at %d replicas, want at least %d\n%s", m.tg.Replicas, m.want, m.trace())
	}
}
