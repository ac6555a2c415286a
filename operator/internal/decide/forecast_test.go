package decide

import (
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestNextWithForecast(t *testing.T) {
	pausedState, _, _ := cycleStates()
	wake := Forecast{Wake: true, Reason: "woke 17:58 for Fri 18:00 (0.83 over 4.2 weeks; lead 2m0s)"}
	hold := Forecast{Hold: true, HoldUntil: at(time.Hour), Reason: "held awake in Fri 18:00 (0.90 over 4.2 weeks; a person 30m0s ago)"}
	early := Forecast{PauseEarly: true, Reason: "paused early at 18:00: Fri 18:00 and 19:00 are expected quiet (0.00 and 0.00 over 4.2 weeks; idle 16m0s)"}
	held := runningFor(-40 * time.Minute)
	held.PauseAt = at(time.Hour)

	runNext(t, []nextCase{
		{
			name: "a pre-wake wakes a paused workload with source forecast and the forecast's reason in the event",
			in:   Input{State: pausedState, Target: Target{Found: true}, Forecast: wake},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantWoken(t, s, napwakev1alpha1.SourceForecast)
				eq(t, s.ForecastAction, napwakev1alpha1.ForecastActionPreWake)
				eq(t, s.Event.Message, "Waking, woken by forecast: restoring 2 replicas: "+wake.Reason)
			},
		},
		{
			name: "a request wins over a pre-wake: the wake is the request's",
			in: Input{State: pausedState, Target: Target{Found: true}, Forecast: wake,
				Annotations: map[string]string{napwakev1alpha1.AnnotationLastRequest: stamp(-time.Second)}},
			check: func(t *testing.T, s Step) {
				t.Helper()
				eq(t, s.Woken, napwakev1alpha1.SourceRequest)
				eq(t, s.ForecastAction, "")
			},
		},
		{
			name: "the hold keeps a workload at its idle pause awake until the hold's end, with an event",
			in:   Input{State: runningFor(-30 * time.Minute), Target: up, Forecast: hold},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseRunning)
				eq(t, s.State.PauseAt, at(time.Hour))
				eq(t, s.ForecastAction, napwakev1alpha1.ForecastActionHold)
				eq(t, s.Event.Reason, napwakev1alpha1.EventForecastHold)
				eq(t, s.Event.Message, "Not paused for idleness: "+hold.Reason)
			},
		},
		{
			name:  "a hold already persisted waits for its end without another event",
			in:    Input{State: held, Target: up, Forecast: hold},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait); eq(t, s.RequeueAfter, time.Hour) },
		},
		{
			name: "a held workload is paused for idleness once the forecast no longer holds it",
			in:   Input{State: held, Target: up},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhasePausing)
				eq(t, s.Paused, napwakev1alpha1.PauseIdle)
			},
		},
		{
			name:  "a hold does not keep a workload within idleAfter from its own pauseAt",
			in:    Input{State: runningFor(-10 * time.Minute), Target: up, Forecast: hold},
			check: func(t *testing.T, s Step) { t.Helper(); eq(t, s.Kind, Wait); eq(t, s.RequeueAfter, 20*time.Minute) },
		},
		{
			name: "pause early pauses a Running workload before idleAfter with reason Forecast",
			in:   Input{State: runningFor(-16 * time.Minute), Target: up, Forecast: early},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhasePausing)
				eq(t, s.Paused, napwakev1alpha1.PauseForecast)
				eq(t, s.State.Pause.Reason, napwakev1alpha1.PauseForecast)
				eq(t, s.ForecastAction, napwakev1alpha1.ForecastActionPauseEarly)
				eq(t, s.Event.Message, "Pausing (Forecast): "+early.Reason+"; saving 2 replicas, then scaling to 0")
			},
		},
		{
			name:  "pause early does not pause a workload inside a schedule window: the window outranks the forecast",
			in:    Input{State: runningFor(-16 * time.Minute), Target: up, Forecast: early, Schedule: Schedule{Windows: in(t, "UTC", "Fri 17:00-19:00")}},
			check: func(t *testing.T, s Step) { t.Helper(); wantNoPause(t, s) },
		},
		{
			name:  "pause early does not pause a workload keep-awake-until holds",
			in:    Input{State: runningFor(-16 * time.Minute), Target: up, Forecast: early, Schedule: Schedule{KeepAwakeUntil: at(time.Hour)}},
			check: func(t *testing.T, s Step) { t.Helper(); wantNoPause(t, s) },
		},
		{
			name: "no pre-wake under pause-until: the override outranks the forecast",
			in:   Input{State: pausedState, Target: Target{Found: true}, Routed: true, Forecast: wake, Schedule: Schedule{PauseUntil: at(time.Hour)}},
			check: func(t *testing.T, s Step) {
				t.Helper()
				eq(t, s.Kind, Wait)
				eq(t, s.ForecastAction, "")
			},
		},
		{
			name: "pause early waits when activity newer than the persisted came in this reconcile",
			in: Input{State: runningFor(-16 * time.Minute), Target: up, Forecast: early,
				Annotations: map[string]string{napwakev1alpha1.AnnotationLastActivity: stamp(-time.Second)}},
			check: func(t *testing.T, s Step) {
				t.Helper()
				wantPatch(t, s, napwakev1alpha1.PhaseRunning)
				eq(t, s.State.LastActivity, at(-time.Second))
			},
		},
	})
}

// wantNoPause checks s starts no pause.
func wantNoPause(t *testing.T, s Step) {
	t.Helper()
	if s.Kind == PatchStatus && s.State.Phase == napwakev1alpha1.PhasePausing {
		t.Fatalf("paused (%s): %s", s.Paused, s.Event.Message)
	}
	eq(t, s.ForecastAction, "")
}

// wantWoken checks s begins a wake by source.
func wantWoken(t *testing.T, s Step, source string) {
	t.Helper()
	wantPatch(t, s, napwakev1alpha1.PhaseResuming)
	eq(t, s.State.LastActivitySource, source)
	eq(t, s.Woken, source)
}
