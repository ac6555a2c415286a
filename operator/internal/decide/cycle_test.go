package decide

import (
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// cycle plays the reconciler and the cluster around Next: it takes each
// step as the reconciler does, and a Wait ends the reconcile, so the next
// one routes afresh. With follow, the target's pods follow its replicas at
// once, as if the Deployment controller and kubelet took no time.
type cycle struct {
	now              time.Time
	st               State
	tg               Target
	ann              map[string]string
	routed, unrouted bool
	follow           bool
}

func (c *cycle) next(t *testing.T) Step {
	t.Helper()
	s := Next(Input{
		Now: c.now, Created: created, State: c.st, IdleAfter: 30 * time.Minute, Annotations: c.ann,
		Target: c.tg, Routed: c.routed, Unrouted: c.unrouted,
	})
	switch s.Kind {
	case PatchStatus:
		c.st = s.State
	case Route:
		c.routed = true
	case Unroute:
		c.unrouted = true
	case Scale:
		if s.Replicas == 0 && !c.routed {
			t.Fatalf("scaling to 0 before routing in this reconcile")
		}
		c.tg.Replicas = s.Replicas
		if c.follow {
			c.tg.StatusReplicas, c.tg.ReadyReplicas = s.Replicas, s.Replicas
		}
	case Wait:
		c.routed, c.unrouted = false, false
	}
	return s
}

// TestAPauseAndAWakeTakeEveryStepInOrder asks Next one step at a time
// through a whole pause and wake, the cluster playing its part between
// steps, and checks each step's kind, then the persisted phase and the
// target's replicas it leaves.
func TestAPauseAndAWakeTakeEveryStepInOrder(t *testing.T) {
	c := &cycle{now: t0, st: runningFor(-30 * time.Minute), tg: Target{Found: true, Replicas: 3, StatusReplicas: 3, ReadyReplicas: 3}, ann: map[string]string{}}
	podsGo := func(c *cycle) { c.tg.StatusReplicas, c.tg.ReadyReplicas, c.tg.PodsLeft = 0, 0, false }
	request := func(c *cycle) {
		c.now = c.now.Add(time.Minute)
		c.ann[napwakev1alpha1.AnnotationLastRequest] = c.now.Format(time.RFC3339)
	}
	podUnready := func(c *cycle) { c.tg.StatusReplicas, c.tg.PodsLeft = 3, true }
	podReady := func(c *cycle) { c.now = c.now.Add(5 * time.Second); c.tg.ReadyReplicas = 1 }
	const (
		running  = napwakev1alpha1.PhaseRunning
		pausing  = napwakev1alpha1.PhasePausing
		paused   = napwakev1alpha1.PhasePaused
		resuming = napwakev1alpha1.PhaseResuming
	)
	for _, tc := range []struct {
		name     string
		before   func(*cycle) // what the cluster does first; nil for nothing
		kind     Kind
		phase    napwakev1alpha1.Phase // persisted after the step
		replicas int32                 // the target's after the step
	}{
		{"idle for idleAfter, the pause is persisted first, saving 3 replicas", nil, PatchStatus, pausing, 3},
		{"with the pause persisted, the Services are routed to the doorman", nil, Route, pausing, 3},
		{"once routed, the target is scaled to 0", nil, Scale, pausing, 0},
		{"while the controller still counts pods, it waits", nil, Wait, pausing, 0},
		{"the next reconcile, pods still left, routes afresh", nil, Route, pausing, 0},
		{"and waits again for the pods to go", nil, Wait, pausing, 0},
		{"once no pod is left, Paused is persisted", podsGo, PatchStatus, paused, 0},
		{"Paused, the routes are kept current", nil, Route, paused, 0},
		{"and it waits for a wake", nil, Wait, paused, 0},
		{"a request wakes it: Resuming is persisted first", request, PatchStatus, resuming, 0},
		{"then the target is scaled to the saved 3 replicas", nil, Scale, resuming, 3},
		{"with no pod Ready yet, it waits, the routes still up", podUnready, Wait, resuming, 3},
		{"once a pod is Ready, the routes go", podReady, Unroute, resuming, 3},
		{"then Running is persisted", nil, PatchStatus, running, 3},
		{"Running, it waits for pauseAt", nil, Wait, running, 3},
	} {
		ok := t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before(c)
			}
			s := c.next(t)
			eq(t, s.Kind, tc.kind)
			eq(t, c.st.Phase, tc.phase)
			eq(t, c.tg.Replicas, tc.replicas)
		})
		if !ok {
			return // each step follows from the one before
		}
	}
	// The request that woke it is the last activity, and idleAfter runs from it.
	eq(t, c.st.LastActivitySource, napwakev1alpha1.SourceRequest)
	eq(t, c.st.PauseAt, t0.Add(time.Minute+30*time.Minute))
}

// TestEveryPathEndsRestored walks the step machine from every phase with
// every kind of signal, applying each step to a simulated target, and checks
// the invariant the operator lives by: whenever the target is at 0 replicas
// while it had more, a pause with the original count is persisted, and the
// routes were made first.
func TestEveryPathEndsRestored(t *testing.T) {
	for _, wake := range []string{napwakev1alpha1.AnnotationLastRequest, napwakev1alpha1.AnnotationLastActivity, napwakev1alpha1.AnnotationWakeRequested} {
		t.Run(wake, func(t *testing.T) {
			c := &cycle{now: t0, tg: Target{Found: true, Replicas: 3, StatusReplicas: 3, ReadyReplicas: 3}, ann: map[string]string{}, follow: true}
			step := func() {
				t.Helper()
				if s := c.next(t); s.Kind == Scale && s.Replicas == 0 && (c.st.Pause == nil || c.st.Pause.Replicas != 3) {
					t.Fatalf("scaling to 0 with %+v persisted", c.st.Pause)
				}
			}
			for i := 0; i < 10 && c.st.Phase != napwakev1alpha1.PhaseRunning; i++ {
				step()
			}
			c.now = c.now.Add(31 * time.Minute)
			for i := 0; i < 10 && c.st.Phase != napwakev1alpha1.PhasePaused; i++ {
				step()
			}
			eq(t, c.tg.Replicas, int32(0))
			c.now = c.now.Add(time.Minute)
			c.ann[wake] = c.now.Format(time.RFC3339)
			for i := 0; i < 10 && c.st.Phase != napwakev1alpha1.PhaseRunning; i++ {
				step()
			}
			eq(t, c.st.Phase, napwakev1alpha1.PhaseRunning)
			eq(t, c.tg.Replicas, int32(3))
		})
	}
}
