package decide

import (
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Forecast is what the forecast
// (docs/design/schedules-forecast.md#the-forecast) says to a workload's
// cycle. The reconciler asks package forecast and sets only what it acts on
// (autoResume, pauseEarly, mode Act); the zero value says nothing, and a
// workload in Observe mode always gets the zero value. In the order of
// precedence (keep-awake-until, pause-until, schedule window, forecast,
// idleness) these come just above idleness: each hook is one call from
// paused or running, after every signal of the workload's own.
type Forecast struct {
	// Wake wakes a Paused workload with no activity of its own: the day's
	// usual first arrival is within the lead (source forecast).
	Wake bool
	// Hold keeps a Running workload whose idle pause has come awake until
	// HoldUntil (the hold that pays, or a pre-wake's give-up time), then it
	// asks again.
	Hold      bool
	HoldUntil time.Time
	// PauseEarly pauses a Running workload before idleAfter (reason
	// Forecast), unless activity newer than the persisted lastActivity came
	// in this reconcile.
	PauseEarly bool
	// Reason is the acting decision's text for the event: "woke 08:56 for
	// Tue 09:00 (0.83 over 4.2 weeks; lead 3m12s)".
	Reason string
}

// forecastWake is the pre-wake of a Paused workload nothing else woke.
func forecastWake(in Input, now time.Time) (Step, bool) {
	if !in.Forecast.Wake {
		return Step{}, false
	}
	s := startWake(in, now, signal{at: now, source: napwakev1alpha1.SourceForecast})
	s.Event.Message += ": " + in.Forecast.Reason
	s.ForecastAction = napwakev1alpha1.ForecastActionPreWake
	return s, true
}

// forecastHold is the hold of a Running workload at its idle pause: next
// with pauseAt moved to the hold's end, and the step that persists it (an
// event when the hold begins or moves on). ok is false when the forecast
// does not hold it.
func forecastHold(in Input, next State, now time.Time) (Step, bool) {
	f := in.Forecast
	until := f.HoldUntil.Truncate(time.Second)
	if !f.Hold || !until.After(now) {
		return Step{}, false
	}
	next.PauseAt = until
	if next.Equal(in.State) {
		return Step{Kind: Wait, RequeueAfter: until.Sub(now)}, true
	}
	s := Step{Kind: PatchStatus, State: next, ForecastAction: napwakev1alpha1.ForecastActionHold}
	if !in.State.PauseAt.Equal(until) {
		s.Event = normal(napwakev1alpha1.EventForecastHold, "Not paused for idleness: "+f.Reason)
	}
	return s, true
}

// forecastPauseEarly is the early pause of a Running workload with no
// activity newer than what is persisted.
func forecastPauseEarly(in Input, next State, now time.Time) (Step, bool) {
	if !in.Forecast.PauseEarly || !next.LastActivity.Equal(in.State.LastActivity) {
		return Step{}, false
	}
	s := startPause(in, next, now, napwakev1alpha1.PauseForecast)
	s.Event.Message = "Pausing (Forecast): " + in.Forecast.Reason + "; saving " + itoa(in.Target.Replicas) + " replicas, then scaling to 0"
	s.ForecastAction = napwakev1alpha1.ForecastActionPauseEarly
	return s, true
}
