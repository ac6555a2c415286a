package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/civil"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/forecast"
)

// The forecast of one workload (docs/design/schedules-forecast.md#the-forecast),
// once a reconcile:
//
//   - loadForecast reads status.forecast (a state of the wrong length or
//     version, an older operator's hourly shares among them, is reported
//     once with InvalidSetting and the forecast starts afresh with no
//     history; an unknown spec.forecast.timeZone turns it
//     off with InvalidSetting) and brings the week up to now;
//   - teachForecastPeople records person-caused activity only: the request, last-activity
//     and wake-requested stamps, the usage signal while Running, and the
//     Prometheus query only with learnFrom: activity; never robots turned
//     away, schedule or forecast wakes;
//   - forecastInput asks PreWake (Paused), Hold and PauseEarly (Running) and says to
//     decide only what it acts on (mode Act); in Observe mode it writes the
//     would-be action's event (ForecastObserved, reportWouldBe) instead, once per slot;
//   - forecastStepped counts each step's figures (forecastfigures.go) before the
//     step's status write, and patchStatus writes status.forecast with it,
//     only when it changed: the state changes when an hour ends or a person
//     comes, so about one extra write an hour.
//
// Requeues come at the next moment a decision can change: the next
// pre-wake instant, the next hour.

// forecastRun is one reconcile's forecast of one workload.
type forecastRun struct {
	spec napwakev1alpha1.ForecastSpec
	// learnOnly says spec.forecast is unset: the forecast learns and
	// counts but asks nothing and reports no metrics.
	learnOnly bool
	// now is the reconcile's time, for the next pre-wake.
	now  time.Time
	f    *forecast.Forecast
	week napwakev1alpha1.LastWeek
	// fig and tally are the figures and what they wait on; base the figures
	// as last persisted, for the metrics.
	fig, base napwakev1alpha1.ForecastFigures
	tally     napwakev1alpha1.ForecastTally
	last      *napwakev1alpha1.ForecastAction
	idleAfter time.Duration
	ask       bool
	// asked is the latest decision of each action in this reconcile.
	asked map[string]forecast.Decision
}

func (fc *forecastRun) act() bool { return fc.spec.Mode != napwakev1alpha1.ForecastObserve }

func (fc *forecastRun) mode() napwakev1alpha1.ForecastMode {
	if fc.act() {
		return napwakev1alpha1.ForecastAct
	}
	return napwakev1alpha1.ForecastObserve
}

// loadForecast sets s.fc from spec.forecast and status.forecast, brought up
// to now. Every workload learns (docs/forecast.md#what-it-keeps): with no
// spec.forecast it learns in UTC and acts on nothing (learnOnly); with an
// unknown spec.forecast.timeZone the forecast is off (InvalidSetting) and
// it goes on learning, acting on nothing, in the zone it learned in.
func (r *ManagedWorkloadReconciler) loadForecast(ctx context.Context, s *reconcileScope, now time.Time) {
	mw := s.mw
	s.fc = nil
	var spec napwakev1alpha1.ForecastSpec
	if mw.Spec.Forecast != nil {
		spec = *mw.Spec.Forecast
	}
	learnOnly := mw.Spec.Forecast == nil
	zone := cmp.Or(spec.TimeZone, "UTC")
	loc, err := time.LoadLocation(zone)
	if err != nil {
		r.warnOnce(s, warnZone, fmt.Sprintf("spec.forecast.timeZone %q is not a known IANA zone: the forecast is off (it goes on learning)", zone))
		spec, learnOnly = napwakev1alpha1.ForecastSpec{}, true
		if mw.Status.Forecast != nil {
			zone = mw.Status.Forecast.TimeZone
		}
		if loc, err = time.LoadLocation(cmp.Or(zone, "UTC")); err != nil {
			loc = time.UTC
		}
	} else {
		r.warned.Delete(warnKey(client.ObjectKeyFromObject(mw), warnZone)) // a zone fixed and broken again warns again
	}
	fc := &forecastRun{
		asked: map[string]forecast.Decision{}, spec: spec, learnOnly: learnOnly, now: now,
		idleAfter: r.idleAfter(s), ask: mw.Spec.Wake.Mode == napwakev1alpha1.WakeAsk,
	}
	st := mw.Status.Forecast
	if st == nil {
		st = &napwakev1alpha1.ForecastStatus{}
	}
	if st.Tally != nil {
		fc.tally = *st.Tally.DeepCopy()
	}
	set := forecast.Settings{IdleAfter: fc.idleAfter, PauseEarly: spec.PauseEarly && !fc.ask, ExtraAwake: fc.budget().Share()}
	if spec.ColdStartCost != nil {
		set.ColdStartCost = spec.ColdStartCost.Duration
	}
	if spec.MaxExtraAwake != nil {
		set.MaxExtraAwake = int(*spec.MaxExtraAwake)
	}
	fc.f, err = forecast.DecodeStatus(st.State, loc, set)
	switch {
	case errors.Is(err, forecast.ErrZoneChanged):
		fc.f = moveZone(ctx, st, loc, set)
	case err != nil:
		r.warnOnce(s, warnState, fmt.Sprintf("%v: the forecast starts afresh", err))
	}
	if fc.f == nil {
		fc.f = forecast.New(loc, now, set)
	} else if fc.week, err = napwakev1alpha1.DecodeLastWeek(st.LastWeek); err != nil {
		fc.week = napwakev1alpha1.LastWeek{}
	}
	if st.Figures != nil {
		fc.fig = *st.Figures.DeepCopy()
	} else {
		fc.fig.Since = timePtr(now.Truncate(time.Second))
		if p := mw.Status.Phase; p == napwakev1alpha1.PhaseRunning || p == napwakev1alpha1.PhaseResuming {
			// The forecast turned on while awake: its awake time counts from now.
			fc.tally.AwakeSince, fc.tally.WokenBy = fc.fig.Since, mw.Status.LastActivitySource
		}
	}
	fc.base = *fc.fig.DeepCopy()
	fc.last = st.Last.DeepCopy()
	fc.f.OnFold(func(slot int, busy, hit bool) { fc.week.Person[slot], fc.week.Busy[slot] = hit, busy })
	fc.f.Advance(now)
	s.fc = fc
	if !fc.learnOnly { // learning alone waits for the next reconcile
		s.keepSoonest(civil.HourStart(civil.Hour(now, loc)+1, loc).Sub(now))
	}
}

// moveZone reads a state learned in status.forecast.timeZone (UTC when
// unset: a workload learns in UTC until spec.forecast names a zone) and
// moves it to loc; nil, to start afresh, when it was learned elsewhere.
func moveZone(ctx context.Context, st *napwakev1alpha1.ForecastStatus, loc *time.Location, set forecast.Settings) *forecast.Forecast {
	log := ctrl.LoggerFrom(ctx)
	from, err := time.LoadLocation(cmp.Or(st.TimeZone, "UTC"))
	if err == nil {
		var f *forecast.Forecast
		if f, err = forecast.DecodeStatus(st.State, from, set); err == nil {
			log.Info("The forecast's zone changed: what it learned moves to the new zone", "from", from.String(), "timeZone", loc.String())
			return f.In(loc)
		}
	}
	log.Info("spec.forecast.timeZone changed from a zone not recorded: the forecast starts afresh", "timeZone", loc.String(), "error", err.Error())
	return nil
}

// budget is status.forecast.tally.budget: what maxExtraAwake caps
// (docs/forecast.md#how-it-decides).
func (fc *forecastRun) budget() forecast.AwakeBudget {
	b := fc.tally.Budget
	if b == nil {
		return forecast.AwakeBudget{}
	}
	return forecast.AwakeBudget{Added: float64(b.AddedSeconds), Idle: float64(b.IdleSeconds), At: b.At.Time}
}

// teachForecastPeople records the person-caused activity of this reconcile, oldest
// first, each only once (the forecast keeps the latest person).
func (r *ManagedWorkloadReconciler) teachForecastPeople(s *reconcileScope, now time.Time, annotations map[string]string, busy, queryActive bool) {
	fc := s.fc
	if fc == nil {
		return
	}
	var at []time.Time
	for _, key := range []string{napwakev1alpha1.AnnotationLastRequest, napwakev1alpha1.AnnotationLastActivity, napwakev1alpha1.AnnotationWakeRequested} {
		if t, ok := personStamp(annotations[key], now); ok {
			at = append(at, t)
		}
	}
	phase := s.mw.Status.Phase
	if busy && phase == napwakev1alpha1.PhaseRunning {
		at = append(at, now)
	}
	if queryActive && fc.spec.LearnFrom == napwakev1alpha1.LearnFromActivity {
		at = append(at, now)
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for _, t := range at {
		t = t.Truncate(time.Second)
		if t.After(fc.f.LastPerson()) {
			fc.person(t, phase)
		}
	}
}

// personStamp reads an activity stamp as decide does: RFC 3339, to the
// second, at most decide.MaxClockSkew ahead (and then taken as now, so the
// week is not brought past now).
func personStamp(v string, now time.Time) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || t.After(now.Add(decide.MaxClockSkew)) {
		return time.Time{}, false
	}
	if t.After(now) {
		t = now
	}
	return t, true
}

// forecastInput asks the forecast about in's phase: what decide acts on (mode Act),
// or, in Observe mode, the would-be action's event and figures.
func (r *ManagedWorkloadReconciler) forecastInput(s *reconcileScope, in decide.Input) decide.Forecast {
	fc := s.fc
	var out decide.Forecast
	if fc == nil {
		return out
	}
	now, st := in.Now, in.State
	idleAt := st.LastActivity.Add(fc.idleAfter) // when idleness alone pauses it
	var d forecast.Decision
	action := ""
	switch {
	case st.Phase == napwakev1alpha1.PhasePaused && fc.spec.AutoResume:
		if !fc.act() && fc.tally.WakeUntil != nil && now.Before(fc.tally.WakeUntil.Time) {
			return out // Observe: a would-be wake is awake until its idle pause
		}
		d, action = fc.f.PreWake(now), napwakev1alpha1.ForecastActionPreWake
		out.Wake = d.Act
	case st.Phase != napwakev1alpha1.PhaseRunning:
		return out
	case now.Before(idleAt) && fc.spec.PauseEarly && !fc.ask:
		d, action = fc.f.PauseEarly(now, st.LastActivity, fc.ask), napwakev1alpha1.ForecastActionPauseEarly
		out.PauseEarly = d.Act
	case !now.Before(idleAt) && fc.spec.AutoResume:
		d, action = fc.f.Hold(now), napwakev1alpha1.ForecastActionHold
		out.Hold, out.HoldUntil = d.Act, d.Until
	default:
		return out
	}
	fc.asked[action] = d
	if d.Until.After(now) {
		s.keepSoonest(d.Until.Sub(now))
	}
	out.Reason = d.Reason
	if !fc.act() {
		r.reportWouldBe(s, in, action, d)
		return decide.Forecast{}
	}
	return out
}

// reportWouldBe reports, in Observe mode, what an acting decision would have
// done: an event and the figures, once per slot (an early pause once per
// idle stretch).
func (r *ManagedWorkloadReconciler) reportWouldBe(s *reconcileScope, in decide.Input, action string, d forecast.Decision) {
	fc := s.fc
	if !d.Act || fc.sameAsLast(action, d.Slot, in.State.LastActivity) {
		return
	}
	now := in.Now.Truncate(time.Second)
	fc.keepLastAction(action, d, now, true)
	r.Recorder.Eventf(s.mw, nil, corev1.EventTypeNormal, napwakev1alpha1.EventForecastObserved, napwakev1alpha1.EventForecastObserved, "%s", d.Observed())
	switch action {
	case napwakev1alpha1.ForecastActionPreWake:
		fc.wakeCounted()
		fc.tally.WakeUntil = timePtr(now.Add(max(fc.idleAfter, fc.f.Lead())))
	case napwakev1alpha1.ForecastActionPauseEarly:
		fc.earlyCounted(in.State.LastActivity.Add(fc.idleAfter))
	}
}

// sameAsLast says the last action was action for slot (an early pause: in
// this idle stretch, after lastActivity).
func (fc *forecastRun) sameAsLast(action string, slot, lastActivity time.Time) bool {
	l := fc.last
	if l == nil || l.Action != action {
		return false
	}
	if action == napwakev1alpha1.ForecastActionPauseEarly {
		return !l.At.Time.Before(lastActivity)
	}
	return l.Slot.Time.Equal(slot)
}

// keepLastAction keeps an action as status.forecast.last.
func (fc *forecastRun) keepLastAction(action string, d forecast.Decision, now time.Time, observed bool) {
	msg := d.Reason
	if observed {
		msg = d.Observed()
	}
	fc.last = &napwakev1alpha1.ForecastAction{
		Action: action, Slot: metav1.NewTime(d.Slot.UTC()), At: metav1.NewTime(now.UTC()), Observed: observed, Message: msg,
	}
}

// status is status.forecast as this reconcile leaves it.
func (fc *forecastRun) status() *napwakev1alpha1.ForecastStatus {
	out := &napwakev1alpha1.ForecastStatus{
		State:    fc.f.EncodeStatus(),
		TimeZone: fc.f.Location().String(),
		LastWeek: napwakev1alpha1.EncodeLastWeek(fc.week),
		Figures:  fc.fig.DeepCopy(),
		Last:     fc.last.DeepCopy(),
	}
	if t := fc.tally.DeepCopy(); *t != (napwakev1alpha1.ForecastTally{}) {
		out.Tally = t
	}
	if fc.spec.AutoResume {
		if wake, arrive, giveUp, ok := fc.f.NextPreWake(fc.now); ok {
			out.NextPreWake = &napwakev1alpha1.ForecastPlan{
				Wake: metav1.NewTime(wake.UTC()), Arrive: metav1.NewTime(arrive.UTC()), GiveUp: metav1.NewTime(giveUp.UTC()),
			}
		}
	}
	return out
}
