package decide

import (
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/schedule"
)

// FuzzNextWithASchedule feeds arbitrary override annotations and
// awake-hours (written by anyone with patch rights) in every phase. What
// must never happen: a panic; a pause begun while keep-awake-until is in
// force; a wake of a Paused workload under pause-until (with no
// wake-requested); a negative RequeueAfter; lastActivity past now plus
// MaxClockSkew.
func FuzzNextWithASchedule(f *testing.F) {
	f.Add("2026-10-23T20:00:00Z", "", "Fri 17:00-19:00", uint8(1), uint8(1), int32(2))
	f.Add("", "2026-10-23T20:00:00Z", "Fri 17:55-19:00", uint8(3), uint8(0), int32(0))
	f.Add("garbage", "2026-10-23T17:00:00Z", "Mon-Fri 08:00-19:00", uint8(2), uint8(2), int32(2))
	f.Add("2026-10-23T18:00:00.5Z", "2026-10-23T21:00:00+02:00", "Sun-Mon", uint8(4), uint8(3), int32(1))
	phases := []napwakev1alpha1.Phase{"", napwakev1alpha1.PhaseRunning, napwakev1alpha1.PhasePausing, napwakev1alpha1.PhasePaused, napwakev1alpha1.PhaseResuming}
	zones := []string{"UTC", "Europe/Berlin", "Pacific/Chatham", "Mars/Olympus"}
	f.Fuzz(func(t *testing.T, keep, pauseUntil, hours string, phase, zone uint8, replicas int32) {
		if replicas < 0 {
			return
		}
		st := runningFor(-40 * time.Minute)
		st.Phase = phases[int(phase)%len(phases)]
		if st.Phase != napwakev1alpha1.PhaseRunning && st.Phase != "" {
			st.Pause = pause(-10*time.Minute, 2, napwakev1alpha1.PauseIdle)
		}
		annotations := map[string]string{napwakev1alpha1.AnnotationKeepAwakeUntil: keep, napwakev1alpha1.AnnotationPauseUntil: pauseUntil}
		var sc Schedule
		sc.KeepAwakeUntil, sc.PauseUntil, _ = ReadOverrides(annotations)
		if s, err := schedule.ParseList(hours, zones[int(zone)%len(zones)]); err == nil {
			sc.Windows = s
		}
		in := Input{Now: t0.Add(300 * time.Millisecond), Created: created, State: st, IdleAfter: 30 * time.Minute, Annotations: annotations,
			Target: Target{Found: true, Replicas: replicas, StatusReplicas: replicas, ReadyReplicas: replicas}, Routed: true, Schedule: sc}
		s := Next(in)
		keepInForce := t0.Before(sc.KeepAwakeUntil)
		switch {
		case s.Paused != "" && keepInForce:
			t.Fatalf("paused (%s) under keep-awake-until %v", s.Paused, sc.KeepAwakeUntil)
		case s.Woken != "" && st.Phase == napwakev1alpha1.PhasePaused && !keepInForce && t0.Before(sc.PauseUntil):
			t.Fatalf("woken by %s under pause-until %v", s.Woken, sc.PauseUntil)
		case s.RequeueAfter < 0:
			t.Fatalf("requeue after %v", s.RequeueAfter)
		case s.State.LastActivity.After(t0.Add(MaxClockSkew)):
			t.Fatalf("lastActivity %v is beyond now+skew", s.State.LastActivity)
		}
		_ = ScheduleStatus(sc, in.Now)
	})
}
