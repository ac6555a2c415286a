package forecast

import (
	"fmt"
	"math"
	"time"

	"napwake.dev/operator/internal/civil"
)

// Decision is one answer of the forecast, with the figures it was drawn
// from (docs/forecast.md#events).
type Decision struct {
	// Act says the forecast would act. A workload in Observe mode reports
	// Observed instead of acting.
	Act bool
	// Reason explains the answer in the words of an event: "held awake
	// until 14:35 (65m past idleAfter): after 13:00 on Tuesdays someone came
	// back within 95m in 72 % of 31 weighted gaps; a cold start is worth
	// 90m" when Act, why not otherwise.
	Reason string
	// Slot names what the answer is about, so Observe mode reports it once:
	// the start of the idle stretch (Hold, PauseEarly) or the planned
	// arrival (PreWake).
	Slot time.Time
	// P is the chance someone comes within the hold or by the give-up time;
	// Weight the weighted count of gaps or days it comes from.
	P, Weight float64
	// Lead is the pre-wake's lead (PreWake only).
	Lead time.Duration
	// Until is the earliest time the answer can change by time alone (no new
	// activity, resume or pause): ask again then; for an acting Hold, when
	// the hold ends. Zero when only new activity can change it.
	Until time.Time
	// observed is Reason as Observe mode reports it.
	observed string
}

// Observed is Reason as a workload in Observe mode reports it: "would hold
// awake until 14:35 (…)".
func (d Decision) Observed() string {
	if d.observed == "" {
		return d.Reason
	}
	return d.observed
}

// acted fills Reason and its Observe form from a verb in both forms.
func (d Decision) acted(did, would, rest string) Decision {
	d.Act, d.Reason, d.observed = true, did+" "+rest, would+" "+rest
	return d
}

// PreWake says whether a workload paused at t is to be woken now so it is
// Ready when the day's first person usually comes (autoResume). It brings
// the forecast up to t first.
func (f *Forecast) PreWake(t time.Time) Decision {
	f.Advance(t)
	day := f.day()
	d := Decision{Lead: f.Lead(), Until: civil.At(day+1, 0, f.loc)}
	if f.stale(t) {
		d.Reason, d.Until = f.staleReason(t), time.Time{}
		return d
	}
	if a := f.arrivals[place(day)]; a < civil.MinutesPerDay {
		d.Reason = fmt.Sprintf("someone came today at %s", civil.At(day, int(a), f.loc).Format("15:04"))
		return d
	}
	if quiet := f.lastPerson.Add(arrivalQuiet); t.Before(quiet) {
		d.Reason, d.Until = "a person was active within 4h", minTime(quiet, d.Until)
		return d
	}
	p, ok := f.planDay(day)
	if !ok {
		d.Reason = fmt.Sprintf("no pre-wake pays on %ss at a cold start worth %s", weekdayName(day), mins(f.set.cost()))
		return d
	}
	d.Slot, d.P, d.Weight = p.arrive, p.p, p.weight
	switch {
	case t.Before(p.wake):
		d.Reason, d.Until = fmt.Sprintf("waking at %s for %s", clock(p.wake, f.loc), clock(p.arrive, f.loc)), p.wake
		return d
	case !t.Before(p.giveUp):
		d.Reason = fmt.Sprintf("nobody came by %s", clock(p.giveUp, f.loc))
		return d
	}
	d.Until = p.giveUp
	return d.acted("woke", "would wake", fmt.Sprintf("%s to be Ready at %s, held until %s: on %ss someone came by %s on %.0f %% of %.1f weighted days (lead %s); a cold start is worth %s",
		clock(t, f.loc), clock(p.arrive, f.loc), clock(p.giveUp, f.loc), weekdayName(day), clock(p.giveUp, f.loc), 100*p.p, p.weight, d.Lead, mins(f.set.cost())))
}

// NextPreWake is the next pre-wake the forecast plans from t on, within a
// week, for `kubectl napwake forecast`: today's when nobody came yet and
// its give-up time is still ahead, else the first day after today whose
// plan pays, drawn from the arrivals known at t. false when none does
// before the workload goes stale (StaleAfter without a person). A person
// within 4 hours of a day's wake still calls it off when it comes
// (PreWake). It brings the forecast up to t first.
func (f *Forecast) NextPreWake(t time.Time) (wake, arrive, giveUp time.Time, ok bool) {
	f.Advance(t)
	today := f.day()
	for day := today; day < today+7; day++ {
		if day == today && f.arrivals[place(day)] < civil.MinutesPerDay {
			continue // someone came today
		}
		p, pays := f.planDayKnown(day, today)
		switch {
		case !pays:
			continue
		case f.lastPerson.IsZero() || p.wake.Sub(f.lastPerson) >= StaleAfter:
			return time.Time{}, time.Time{}, time.Time{}, false
		case !t.Before(p.giveUp):
			continue
		}
		return p.wake, p.arrive, p.giveUp, true
	}
	return time.Time{}, time.Time{}, time.Time{}, false
}

// Hold says whether a workload awake at t, idle for IdleAfter or more, is
// not to be paused yet (autoResume): a pre-wake is waiting for its give-up
// time, or staying up to the best hold pays. It brings the forecast up to t
// first.
func (f *Forecast) Hold(t time.Time) Decision {
	f.Advance(t)
	d := Decision{Slot: f.lastPerson}
	if f.stale(t) {
		d.Reason = f.staleReason(t)
		return d
	}
	if p, ok := f.waiting(t); ok {
		d.Slot, d.P, d.Weight, d.Until = p.arrive, p.p, p.weight, p.giveUp
		return d.acted("held awake", "would hold awake", fmt.Sprintf("until %s, the pre-wake's give-up time", clock(p.giveUp, f.loc)))
	}
	s, idle := f.lastPerson, f.set.IdleAfter
	b, ok := f.best(s, t.Sub(s), idle+MaxHoldPast, holdPrior)
	if !ok {
		d.Reason = f.noHold(s, b)
		return d
	}
	d.P, d.Weight, d.Until = b.p, b.weight, s.Add(b.hold)
	return d.acted("held awake", "would hold awake", fmt.Sprintf("until %s (%s past idleAfter): %s someone came back within %s in %.0f %% of %.0f weighted gaps; a cold start is worth %s",
		clock(d.Until, f.loc), mins(b.hold.Minutes()-idle.Minutes()), f.after(s), mins(b.hold.Minutes()), 100*b.p, b.weight, mins(f.set.cost())))
}

// PauseEarly says whether a workload awake at t, last active at
// lastActivity, is to be paused before idleAfter (pauseEarly): idle
// PauseEarlyIdle or more, and no hold from now on pays at the price of a
// cold start. A workload that asks (wake mode Ask) never pauses early. It
// brings the forecast up to t first.
func (f *Forecast) PauseEarly(t, lastActivity time.Time, ask bool) Decision {
	f.Advance(t)
	idle, idleAt := t.Sub(lastActivity), lastActivity.Add(f.set.IdleAfter)
	d := Decision{Slot: lastActivity}
	switch {
	case ask:
		d.Reason = "wake mode Ask never pauses early"
		return d
	case !t.Before(idleAt):
		d.Reason = "idle for idleAfter: the idle rule pauses it"
		return d
	case idle < PauseEarlyIdle:
		d.Reason, d.Until = fmt.Sprintf("idle %s of %s", idle.Round(time.Second), PauseEarlyIdle), lastActivity.Add(PauseEarlyIdle)
		return d
	}
	if p, ok := f.waiting(t); ok {
		d.Reason, d.Until = fmt.Sprintf("a pre-wake waits for a person until %s", clock(p.giveUp, f.loc)), p.giveUp
		return d
	}
	b, pays := f.best(lastActivity, idle, f.set.IdleAfter+MaxHoldPast, 0)
	d.P, d.Weight = b.p, b.weight
	if pays || b.weight < minWeight {
		// Another minute idle rules out the gaps that end in it: ask again.
		d.Reason, d.Until = f.noPause(lastActivity, b, pays), minTime(t.Add(time.Minute), idleAt)
		return d
	}
	return d.acted("paused early", "would pause early", fmt.Sprintf("at %s, idle %s of %s: %s nobody came back within %s in enough of %.0f weighted gaps to be worth a cold start of %s",
		clock(t, f.loc), idle.Round(time.Minute), f.set.IdleAfter, f.after(lastActivity), mins(f.set.IdleAfter.Minutes()+MaxHoldPast.Minutes()), b.weight, mins(f.set.cost())))
}

// waiting returns today's pre-wake when t is between its wake and its
// give-up time and no person came since the wake.
func (f *Forecast) waiting(t time.Time) (plan, bool) {
	p, ok := f.planDay(f.day())
	return p, ok && f.lastPerson.Before(p.wake) && !t.Before(p.wake) && t.Before(p.giveUp)
}

// noHold says why no hold pays.
func (f *Forecast) noHold(s time.Time, b choice) string {
	if b.weight < minWeight {
		return fmt.Sprintf("too few gaps like this one (%.1f weighted) to hold", b.weight)
	}
	return fmt.Sprintf("no hold pays: %s returns within 4h past idleAfter are too rare in %.0f weighted gaps for a cold start worth %s", f.after(s), b.weight, mins(f.set.cost()))
}

// noPause says why it does not pause early.
func (f *Forecast) noPause(s time.Time, b choice, pays bool) string {
	if !pays {
		return fmt.Sprintf("too few gaps like this one (%.1f weighted) to pause early", b.weight)
	}
	return fmt.Sprintf("waiting pays: %s someone came back within %s in %.0f %% of %.0f weighted gaps", f.after(s), mins(b.hold.Minutes()), 100*b.p, b.weight)
}

func (f *Forecast) stale(t time.Time) bool {
	return f.lastPerson.IsZero() || t.Sub(f.lastPerson) >= StaleAfter
}

func (f *Forecast) staleReason(t time.Time) string {
	if f.lastPerson.IsZero() {
		return "no person yet: the forecast has nothing to go on"
	}
	return fmt.Sprintf("no person for %.1f days: an environment untouched for 4 days is never woken or held", t.Sub(f.lastPerson).Hours()/civil.HoursPerDay)
}

// after names an idle stretch's start as the events do: "after 13:00 on
// Tuesdays".
func (f *Forecast) after(s time.Time) string {
	day, _ := civil.Day(s, f.loc)
	return fmt.Sprintf("after %s on %ss", clock(s, f.loc), weekdayName(day))
}

func weekdayName(day int64) string {
	return [...]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}[civil.Weekday(day)]
}

func clock(t time.Time, loc *time.Location) string { return t.In(loc).Format("15:04") }

// mins writes minutes as the events do: "95m".
func mins(m float64) string { return fmt.Sprintf("%.0fm", math.Round(m)) }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
