package decide

import (
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// FuzzNext feeds arbitrary acting annotation values (written by anyone with
// patch rights) in every phase, routed in this reconcile or not. What must
// never happen: a panic; a scale to 0 unless a pause is persisted, the phase
// is Pausing and the routes were made in this reconcile; a Route unless a
// pause is persisted and the phase is Pausing or Paused; an Unroute but
// while Resuming; a Route or Unroute asked for twice in a reconcile; a
// scale-up to anything but the saved replicas (at least 1); a pause that
// saves a count other than the target's (or, while Resuming, the larger of
// it and the count the wake restores); lastActivity moving more than
// MaxClockSkew past now. The phase byte also says what was done: its
// quotient by the number of phases has bit 0 for Routed and bit 1 for
// Unrouted.
func FuzzNext(f *testing.F) {
	f.Add("2026-10-23T18:00:00Z", "2026-10-23T17:00:00Z", "", "", uint8(0), int32(2), int32(3))
	f.Add("garbage", "2026-10-23T18:00:30.5+02:00", "9999-12-31T23:59:59Z", "2026-10-23T18:00:00Z", uint8(2), int32(0), int32(0))
	f.Add("", "", "2026-10-23T17:59:59Z", "2026-10-23T18:00:59Z", uint8(3), int32(1), int32(5))
	f.Add("", "", "", "", uint8(7), int32(2), int32(2))  // Pausing, routed
	f.Add("", "", "", "", uint8(14), int32(1), int32(1)) // Resuming, unrouted
	phases := []napwakev1alpha1.Phase{"", napwakev1alpha1.PhaseRunning, napwakev1alpha1.PhasePausing, napwakev1alpha1.PhasePaused, napwakev1alpha1.PhaseResuming}
	f.Fuzz(func(t *testing.T, lastReq, lastAct, wakeReq, pauseReq string, phase uint8, replicas, saved int32) {
		if replicas < 0 || saved < 0 {
			return // the API server refuses negative replicas
		}
		st := runningFor(-20 * time.Minute)
		st.Phase = phases[int(phase)%len(phases)]
		done := int(phase) / len(phases)
		routed, unrouted := done&1 != 0, done&2 != 0
		if st.Phase != napwakev1alpha1.PhaseRunning && st.Phase != "" {
			st.Pause = pause(-10*time.Minute, saved, napwakev1alpha1.PauseIdle)
		}
		in := Input{
			Now: t0, Created: created, State: st, IdleAfter: 30 * time.Minute,
			Annotations: map[string]string{
				napwakev1alpha1.AnnotationLastRequest: lastReq, napwakev1alpha1.AnnotationLastActivity: lastAct,
				napwakev1alpha1.AnnotationWakeRequested: wakeReq, napwakev1alpha1.AnnotationPauseRequested: pauseReq,
			},
			Target: Target{Found: true, Replicas: replicas, StatusReplicas: replicas, ReadyReplicas: replicas},
			Routed: routed, Unrouted: unrouted,
		}
		s := Next(in)
		switch {
		case s.Kind == Scale && s.Replicas == 0:
			if st.Pause == nil || st.Phase != napwakev1alpha1.PhasePausing || !routed {
				t.Fatalf("scale to 0 from %+v, routed %v", st, routed)
			}
		case s.Kind == Route:
			if st.Pause == nil || (st.Phase != napwakev1alpha1.PhasePausing && st.Phase != napwakev1alpha1.PhasePaused) || routed {
				t.Fatalf("route from %+v, routed %v", st, routed)
			}
		case s.Kind == Unroute:
			if st.Phase != napwakev1alpha1.PhaseResuming || unrouted {
				t.Fatalf("unroute from %+v, unrouted %v", st, unrouted)
			}
		case s.Kind == Scale:
			if s.Replicas != WantReplicas(st.Pause) {
				t.Fatalf("scale to %d, saved %v", s.Replicas, st.Pause)
			}
		case s.Paused != "":
			want := replicas
			if st.Phase == napwakev1alpha1.PhaseResuming {
				want = max(replicas, saved) // the count a wake under way restores
			}
			if s.State.Pause == nil || s.State.Pause.Replicas != want || s.State.Phase != napwakev1alpha1.PhasePausing {
				t.Fatalf("pause %+v of a target with %d replicas", s.State.Pause, replicas)
			}
		}
		if s.State.LastActivity.After(t0.Add(MaxClockSkew)) {
			t.Fatalf("lastActivity %v is beyond now+skew", s.State.LastActivity)
		}
	})
}
