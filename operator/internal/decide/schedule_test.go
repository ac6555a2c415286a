package decide

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/schedule"
)

// in returns a schedule of windows in zone; t0 is Friday 18:00 UTC.
func in(t *testing.T, zone string, windows ...string) *schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(windows, zone)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNextWithASchedule(t *testing.T) {
	pausedState, pausingState, resumingState := cycleStates() // paused since 17:50, pausing since 17:59:50
	woken := func(source string, last time.Time, event string) func(t *testing.T, s Step) {
		return func(t *testing.T, s Step) {
			t.Helper()
			wantWake(t, s, source)
			eq(t, s.State.LastActivity, last)
			wantIn(t, s.Event.Message, event)
		}
	}
	pausesFor := func(reason napwakev1alpha1.PauseReason, event string) func(t *testing.T, s Step) {
		return func(t *testing.T, s Step) {
			t.Helper()
			wantPatch(t, s, napwakev1alpha1.PhasePausing)
			eq(t, s.Paused, reason)
			wantIn(t, s.Event.Message, event)
		}
	}
	waits := func(after time.Duration) func(t *testing.T, s Step) {
		return func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait); eq(t, s.RequeueAfter, after) }
	}
	holdsUntil := func(pauseAt time.Time) func(t *testing.T, s Step) {
		return func(t *testing.T, s Step) {
			t.Helper()
			wantPatch(t, s, napwakev1alpha1.PhaseRunning)
			eq(t, s.State.PauseAt, pauseAt)
		}
	}
	wakeRequested := map[string]string{napwakev1alpha1.AnnotationWakeRequested: stamp(-time.Second)}
	request := map[string]string{napwakev1alpha1.AnnotationLastRequest: stamp(-time.Second)}
	keep := Schedule{KeepAwakeUntil: at(2 * time.Hour)}
	pauseUntil := Schedule{PauseUntil: at(time.Hour)}
	pausedInWindow := withPhase(runningFor(-time.Hour), napwakev1alpha1.PhasePaused, pause(-30*time.Minute, 2, napwakev1alpha1.PauseRequested))
	heldAt19 := runningFor(-40 * time.Minute)
	heldAt19.PauseAt = at(time.Hour)

	runNext(t, []nextCase{
		{
			name:  "a window's start wakes a workload paused before it, with source schedule and an event naming the window",
			in:    Input{State: pausedState, Target: Target{Found: true}, Schedule: Schedule{Windows: in(t, "UTC", "Fri 17:55-19:00")}},
			check: woken(napwakev1alpha1.SourceSchedule, at(-5*time.Minute), "woken by schedule window Fri 17:55-19:00 (Fri 17:55 to Fri 19:00 UTC)"),
		},
		{
			name:  "a window's start calls off a pause begun before it",
			in:    Input{State: pausingState, Target: up, Schedule: Schedule{Windows: in(t, "UTC", "Fri 18:00-19:00")}},
			check: calledOffBy(napwakev1alpha1.SourceSchedule),
		},
		{
			name:  "a pause begun inside the window holds until something else wakes it",
			in:    Input{State: pausedState, Target: Target{Found: true}, Routed: true, Schedule: Schedule{Windows: in(t, "UTC", "Fri 17:45-19:00")}},
			check: waits(time.Hour),
		},
		{
			name:  "inside a window a workload idle past idleAfter is not paused: pauseAt is the window's end",
			in:    Input{State: runningFor(-40 * time.Minute), Target: up, Schedule: Schedule{Windows: in(t, "UTC", "Fri 17:00-19:00")}},
			check: holdsUntil(at(time.Hour)),
		},
		{
			name:  "inside a window Wait comes back exactly at the window's end",
			in:    Input{State: heldAt19, Target: up, Schedule: Schedule{Windows: in(t, "UTC", "Fri 17:00-19:00")}},
			check: waits(time.Hour),
		},
		{
			name:  "inside a window pause-requested still pauses",
			in:    Input{State: runningFor(-time.Minute), Target: up, Annotations: map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(-time.Second)}, Schedule: Schedule{Windows: in(t, "UTC", "Fri 17:00-19:00")}},
			check: pausesFor(napwakev1alpha1.PauseRequested, "Requested"),
		},
		{
			name:  "at a window's end the idle rules resume: idle for 40 minutes, it pauses",
			in:    Input{State: heldAt19, Target: up, Schedule: Schedule{Windows: in(t, "UTC", "Fri 17:00-18:00")}},
			check: pausesFor(napwakev1alpha1.PauseIdle, "Idle"),
		},
		{
			name:  "at a window's end a workload used 10 minutes ago pauses idleAfter after that use",
			in:    Input{State: runningFor(-10 * time.Minute), Target: up, Schedule: Schedule{Windows: in(t, "UTC", "Fri 17:00-18:00")}},
			check: waits(20 * time.Minute),
		},
		{
			name:  "outside a window Wait comes back at the next window's start when it is sooner than pauseAt",
			in:    Input{State: runningFor(-10 * time.Minute), Target: up, Schedule: Schedule{Windows: in(t, "UTC", "Fri 18:05-19:00")}},
			check: waits(5 * time.Minute),
		},
		{
			name:  "a paused workload's Wait comes back at the next window's start",
			in:    Input{State: pausedState, Target: Target{Found: true}, Routed: true, Schedule: Schedule{Windows: in(t, "UTC", "Fri 18:05-19:00")}},
			check: waits(5 * time.Minute),
		},
		{
			name:  "outside a window a request still wakes it",
			in:    Input{State: pausedState, Target: Target{Found: true}, Annotations: request, Schedule: Schedule{Windows: in(t, "UTC", "Mon 08:00-19:00")}},
			check: woken(napwakev1alpha1.SourceRequest, at(-time.Second), "woken by request"),
		},
		{
			name:  "keep-awake-until wakes a paused workload with source annotation, naming the annotation and its end",
			in:    Input{State: pausedState, Target: Target{Found: true}, Schedule: keep},
			check: woken(napwakev1alpha1.SourceAnnotation, t0, "napwake.dev/keep-awake-until (until 2026-10-23T20:00:00Z)"),
		},
		{
			name:  "keep-awake-until calls off a pause under way",
			in:    Input{State: pausingState, Target: up, Schedule: keep},
			check: calledOffBy(napwakev1alpha1.SourceAnnotation),
		},
		{
			name:  "keep-awake-until holds a workload idle past idleAfter until it ends",
			in:    Input{State: runningFor(-40 * time.Minute), Target: up, Schedule: keep},
			check: holdsUntil(at(2 * time.Hour)),
		},
		{
			name:  "keep-awake-until ending before the window it is in holds until the window's end",
			in:    Input{State: runningFor(-40 * time.Minute), Target: up, Schedule: Schedule{KeepAwakeUntil: at(30 * time.Minute), Windows: in(t, "UTC", "Fri 17:00-19:00")}},
			check: holdsUntil(at(time.Hour)),
		},
		{
			name:  "keep-awake-until beats pause-requested",
			in:    Input{State: runningFor(-time.Minute), Target: up, Annotations: map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(-time.Second)}, Schedule: keep},
			check: holdsUntil(at(2 * time.Hour)),
		},
		{
			name:  "keep-awake-until beats pause-requested while Resuming",
			in:    Input{State: resumingState, Target: Target{Found: true, Replicas: 2}, Annotations: map[string]string{napwakev1alpha1.AnnotationPauseRequested: stamp(-time.Second)}, Schedule: keep},
			check: waits(ReadyRecheck),
		},
		{
			name:  "keep-awake-until beats pause-until",
			in:    Input{State: pausedState, Target: Target{Found: true}, Schedule: Schedule{KeepAwakeUntil: at(time.Hour), PauseUntil: at(2 * time.Hour)}},
			check: woken(napwakev1alpha1.SourceAnnotation, t0, "keep-awake-until"),
		},
		{
			name:  "an expired keep-awake-until is ignored",
			in:    Input{State: runningFor(-40 * time.Minute), Target: up, Schedule: Schedule{KeepAwakeUntil: at(-5 * time.Minute)}},
			check: pausesFor(napwakev1alpha1.PauseIdle, "Idle"),
		},
		{
			name:  "pause-until pauses a running workload, saying until when",
			in:    Input{State: runningFor(-time.Minute), Target: up, Schedule: pauseUntil},
			check: pausesFor(napwakev1alpha1.PauseRequested, "Pausing (napwake.dev/pause-until 2026-10-23T19:00:00Z): saving 2 replicas"),
		},
		{
			name:  "pause-until pauses a workload that is resuming",
			in:    Input{State: resumingState, Target: Target{Found: true, Replicas: 2}, Schedule: pauseUntil},
			check: pausesFor(napwakev1alpha1.PauseRequested, "pause-until"),
		},
		{
			name:  "pause-until refuses a request's wake and Wait comes back at its end",
			in:    Input{State: pausedState, Target: Target{Found: true}, Routed: true, Annotations: request, Schedule: pauseUntil},
			check: waits(time.Hour),
		},
		{
			name:  "pause-until keeps a pause under way from being called off by a request",
			in:    Input{State: pausingState, Target: up, Annotations: request, Schedule: pauseUntil},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Route) },
		},
		{
			name:  "pause-until yields to wake-requested",
			in:    Input{State: pausedState, Target: Target{Found: true}, Annotations: wakeRequested, Schedule: pauseUntil},
			check: woken(napwakev1alpha1.SourceWakeRequested, at(-time.Second), "woken by wake-requested"),
		},
		{
			name: "pause-until leaves a workload woken by wake-requested to the idle rules",
			in: Input{State: withPhase(runningFor(-10*time.Minute), napwakev1alpha1.PhaseRunning, pause(-20*time.Minute, 2, napwakev1alpha1.PauseRequested)),
				Target: up, Annotations: map[string]string{napwakev1alpha1.AnnotationWakeRequested: stamp(-10 * time.Minute)}, Schedule: pauseUntil},
			check: holdsUntil(at(20 * time.Minute)),
		},
		{
			name: "pause-until with a pause-requested, as pause --until writes, pauses a workload woken by wake-requested",
			in: Input{State: withPhase(runningFor(-10*time.Minute), napwakev1alpha1.PhaseRunning, pause(-20*time.Minute, 2, napwakev1alpha1.PauseRequested)),
				Target: up, Schedule: pauseUntil, Annotations: map[string]string{
					napwakev1alpha1.AnnotationWakeRequested: stamp(-10 * time.Minute), napwakev1alpha1.AnnotationPauseRequested: stamp(-time.Second)}},
			check: pausesFor(napwakev1alpha1.PauseRequested, "Requested"),
		},
		{
			name:  "pause-until beats a window's start",
			in:    Input{State: pausedState, Target: Target{Found: true}, Routed: true, Schedule: Schedule{PauseUntil: at(time.Hour), Windows: in(t, "UTC", "Fri 17:55-20:00")}},
			check: waits(time.Hour),
		},
		{
			name:  "pause-until running out inside a window hands the workload to the schedule then",
			in:    Input{State: pausedInWindow, Target: Target{Found: true}, Schedule: Schedule{PauseUntil: at(-5 * time.Minute), Windows: in(t, "UTC", "Fri 17:00-19:00")}},
			check: woken(napwakev1alpha1.SourceSchedule, at(-5*time.Minute), "window Fri 17:00-19:00"),
		},
		{
			name:  "an expired pause-until is ignored: a request wakes it",
			in:    Input{State: pausedState, Target: Target{Found: true}, Annotations: request, Schedule: Schedule{PauseUntil: at(-time.Minute)}},
			check: woken(napwakev1alpha1.SourceRequest, at(-time.Second), "request"),
		},
		{
			name: "a target scaled up under pause-until is paused again, saving the new count",
			in:   Input{State: pausedState, Target: Target{Found: true, Replicas: 3}, Schedule: pauseUntil},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhasePausing)
				eq(t, s.State.Pause.Replicas, 3)
			},
		},
	})
}

// TestNextWithAScheduleAcrossADSTChange: Europe/Berlin leaves summer time on
// Sunday 2026-10-25, so Mon-Fri 08:00-19:00 is 06:00-17:00 UTC on Friday
// the 23rd and 07:00-18:00 UTC on Monday the 26th.
func TestNextWithAScheduleAcrossADSTChange(t *testing.T) {
	berlin := Schedule{Windows: in(t, "Europe/Berlin", "Mon-Fri 08:00-19:00")}
	friday := withPhase(runningFor(-time.Hour), napwakev1alpha1.PhasePaused, pause(-time.Hour, 2, napwakev1alpha1.PauseIdle)) // since 17:00 UTC
	for _, tc := range []struct {
		name  string
		now   time.Time
		check func(t *testing.T, s Step)
	}{
		{
			name: "a paused workload on Saturday noon waits exactly until Monday 08:00 CET, 43 hours, not 42",
			now:  time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC),
			check: func(t *testing.T, s Step) {
				t.Helper()
				eq(t, s.Kind, Wait)
				eq(t, s.RequeueAfter, 43*time.Hour)
			},
		},
		{
			name: "Monday's window wakes it at 07:00 UTC, 08:00 on the clock after the change",
			now:  time.Date(2026, 10, 26, 7, 0, 30, 0, time.UTC),
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseResuming)
				eq(t, s.State.LastActivitySource, napwakev1alpha1.SourceSchedule)
				eq(t, s.State.LastActivity, time.Date(2026, 10, 26, 7, 0, 0, 0, time.UTC))
				wantIn(t, s.Event.Message, "window Mon-Fri 08:00-19:00 (Mon 08:00 to Mon 19:00 Europe/Berlin)")
			},
		},
		{
			name: "at 06:59 UTC on Monday, still 07:59 on the clock, it sleeps",
			now:  time.Date(2026, 10, 26, 6, 59, 0, 0, time.UTC),
			check: func(t *testing.T, s Step) {
				t.Helper()
				eq(t, s.Kind, Wait)
				eq(t, s.RequeueAfter, time.Minute)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, Next(Input{Now: tc.now, Created: created, State: friday, IdleAfter: 30 * time.Minute,
				Target: Target{Found: true}, Routed: true, Schedule: berlin}))
		})
	}
}

func TestReadOverrides(t *testing.T) {
	keep, pause, problems := ReadOverrides(map[string]string{
		napwakev1alpha1.AnnotationKeepAwakeUntil: "2026-10-23T20:00:00+02:00",
		napwakev1alpha1.AnnotationPauseUntil:     "tomorrow",
	})
	eq(t, keep, at(0))
	eq(t, pause.IsZero(), true)
	if len(problems) != 1 {
		t.Fatalf("problems %q, want one for pause-until", problems)
	}
	wantIn(t, problems[0], `napwake.dev/pause-until="tomorrow" is not an RFC 3339 time`)
}

func TestScheduleStatus(t *testing.T) {
	for _, tc := range []struct {
		name              string
		sc                Schedule
		awake             bool
		start, end, until time.Time
		override          string
		none              bool
	}{
		{name: "neither a schedule nor an override says nothing", none: true},
		{name: "an expired override alone says nothing", sc: Schedule{PauseUntil: at(-time.Minute)}, none: true},
		{
			name:  "inside a window it shows the window's end and the next start",
			sc:    Schedule{Windows: in(t, "UTC", "Fri 17:00-19:00", "Mon 08:00-09:00")},
			awake: true, end: at(time.Hour), start: time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC),
		},
		{
			name:  "outside a window it shows the next window's start and end",
			sc:    Schedule{Windows: in(t, "UTC", "Mon 08:00-09:00")},
			start: time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC), end: time.Date(2026, 10, 26, 9, 0, 0, 0, time.UTC),
		},
		{name: "keep-awake-until in force is shown with its end", sc: Schedule{KeepAwakeUntil: at(time.Hour)}, override: napwakev1alpha1.OverrideKeepAwake, until: at(time.Hour)},
		{name: "pause-until in force is shown with its end", sc: Schedule{PauseUntil: at(time.Hour)}, override: napwakev1alpha1.OverridePause, until: at(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ScheduleStatus(tc.sc, t0.Add(300*time.Millisecond))
			if tc.none {
				if got != nil {
					t.Fatalf("got %+v, want nil", got)
				}
				return
			}
			eq(t, got.Awake, tc.awake)
			eq(t, got.Override, tc.override)
			eqTime(t, "nextStart", got.NextStart, tc.start)
			eqTime(t, "end", got.End, tc.end)
			eqTime(t, "overrideUntil", got.OverrideUntil, tc.until)
		})
	}
}

func eqTime(t *testing.T, name string, got *metav1.Time, want time.Time) {
	t.Helper()
	switch {
	case got == nil && !want.IsZero():
		t.Errorf("%s unset, want %v", name, want)
	case got != nil && !got.Time.Equal(want):
		t.Errorf("%s %v, want %v", name, got.Time, want)
	}
}
