package controller

import (
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/metrics"
)

// The forecast's figures (status.forecast.figures and the
// napwake_forecast_* metrics), with the forecast simulator's definitions
// (internal/tools/forecastsim, sim.go) where it has them:
//
//   - a cold start is person-caused activity that finds the workload
//     Paused, Pausing or Resuming; it is missed when autoResume is on and
//     the forecast has learned a week, so it could have acted;
//   - a pre-wake is used when a person comes before the workload's next
//     pause (Observe: before the would-be wake's idle pause);
//   - a cold start is avoided when a person comes while awake where
//     idleness alone would have paused: after a used pre-wake, or while
//     the hold keeps it past its idle pause;
//   - an early pause is regretted when a person comes while idleness alone
//     would still have kept it awake;
//   - awake time counts from each wake to its pause, by the wake's source,
//     the time the hold kept it past its idle pause apart as "hold".

// holdReason is the awake-time key of the hold.
const holdReason = "hold"

// person counts the figures of person-caused activity at t, the workload
// in phase, and teaches the forecast.
func (fc *forecastRun) person(t time.Time, phase napwakev1alpha1.Phase) {
	fc.f.RecordPerson(t)
	if fc.fig.Since != nil && t.Before(fc.fig.Since.Time) {
		return // a stamp from before the counting began
	}
	f, tl := &fc.fig, &fc.tally
	awake := phase == napwakev1alpha1.PhaseRunning
	if tl.WakePending && (phase != napwakev1alpha1.PhasePaused || (tl.WakeUntil != nil && t.Before(tl.WakeUntil.Time))) {
		f.ForecastWakesUsed++
		if awake || !fc.act() {
			f.ColdStartsAvoided++
		}
	}
	tl.WakePending, tl.WakeUntil = false, nil
	if tl.HeldFrom != nil && awake && !t.Before(tl.HeldFrom.Time) {
		f.ColdStartsAvoided++
		fc.endHold(t)
	}
	if tl.RegretBefore != nil && t.Before(tl.RegretBefore.Time) {
		f.EarlyPauseRegrets++
	}
	tl.RegretBefore = nil
	if !awake {
		f.ColdStartsPerson++
		if fc.spec.AutoResume && fc.f.Learned() {
			f.ColdStartsMissed++
		}
	}
}

// endHold moves the time the hold kept the workload awake, up to t, to the
// hold's awake time.
func (fc *forecastRun) endHold(t time.Time) {
	tl := &fc.tally
	if held := t.Sub(tl.HeldFrom.Time); held > 0 {
		fc.addAwake(t, holdReason, held)
		if tl.AwakeSince != nil {
			tl.AwakeSince = timePtr(tl.AwakeSince.Add(held))
		}
	}
	tl.HeldFrom = nil
}

// addAwake counts d awake, ended at t, woken (or held) by reason: in the
// figures, and in the budget maxExtraAwake caps, as added when the
// forecast's hold or wake kept it up, else as idleness alone's.
func (fc *forecastRun) addAwake(t time.Time, reason string, d time.Duration) {
	if reason == "" {
		reason = napwakev1alpha1.SourceCreated
	}
	if fc.fig.AwakeSeconds == nil {
		fc.fig.AwakeSeconds = map[string]int64{}
	}
	fc.fig.AwakeSeconds[reason] += int64(d / time.Second)
	var added, idle time.Duration
	if reason == holdReason || reason == napwakev1alpha1.SourceForecast {
		added = d
	} else {
		idle = d
	}
	b := fc.budget().Add(t, added, idle)
	fc.tally.Budget = &napwakev1alpha1.AwakeBudget{
		AddedSeconds: int64(math.Round(b.Added)), IdleSeconds: int64(math.Round(b.Idle)), At: metav1.NewTime(b.At.UTC()),
	}
}

// wakeCounted counts a pre-wake (made or, in Observe mode, reported).
func (fc *forecastRun) wakeCounted() {
	fc.fig.ForecastWakes++
	fc.tally.WakePending, fc.tally.WakeUntil = true, nil
}

// earlyCounted counts an early pause; idleAt is when idleness alone would
// have paused.
func (fc *forecastRun) earlyCounted(idleAt time.Time) {
	fc.fig.EarlyPauses++
	fc.tally.RegretBefore = timePtr(idleAt)
}

// forecastStepped counts what step, decided from in, does: wakes, pauses and the
// forecast's actions. It runs before the step's status write, which
// persists it.
func (r *ManagedWorkloadReconciler) forecastStepped(s *reconcileScope, in decide.Input, step decide.Step) {
	fc := s.fc
	if fc == nil || step.Kind != decide.PatchStatus {
		return
	}
	now, tl := in.Now.Truncate(time.Second), &fc.tally
	if step.ResumeTook > 0 {
		fc.f.RecordResume(step.ResumeTook)
	}
	if d, ok := fc.asked[step.ForecastAction]; ok {
		fc.keepLastAction(step.ForecastAction, d, now, false)
	}
	switch {
	case step.Woken != "" || (in.State.Phase == "" && step.State.Phase == napwakev1alpha1.PhaseRunning):
		tl.AwakeSince, tl.WokenBy = timePtr(now), step.Woken
		if step.ForecastAction == napwakev1alpha1.ForecastActionPreWake {
			fc.wakeCounted()
		}
	case step.Paused != "":
		if tl.HeldFrom != nil {
			fc.endHold(now)
		}
		if tl.AwakeSince != nil {
			fc.addAwake(now, tl.WokenBy, now.Sub(tl.AwakeSince.Time))
		}
		tl.AwakeSince, tl.WokenBy = nil, ""
		if fc.act() {
			tl.WakePending = false // a pre-wake nobody used before this pause
		}
		if step.ForecastAction == napwakev1alpha1.ForecastActionPauseEarly {
			fc.earlyCounted(in.State.LastActivity.Add(fc.idleAfter))
		}
	case step.ForecastAction == napwakev1alpha1.ForecastActionHold && tl.HeldFrom == nil:
		tl.HeldFrom = timePtr(in.State.LastActivity.Add(fc.idleAfter))
	}
}

// forecastPersisted counts, once status.forecast is written, what the
// figures gained in the metrics.
func (r *ManagedWorkloadReconciler) forecastPersisted(s *reconcileScope, m *metrics.Metrics) {
	fc := s.fc
	if fc == nil || fc.learnOnly {
		return
	}
	m.Forecast.Add(fc.mode(), fc.base, fc.fig)
	fc.base = *fc.fig.DeepCopy()
}
