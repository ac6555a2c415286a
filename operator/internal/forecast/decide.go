package forecast

import (
	"fmt"
	"time"

	"napwake.dev/operator/internal/civil"
)

// Decision is one answer of the forecast, with what it was drawn from.
type Decision struct {
	// Act says the forecast would act. A workload in Observe mode reports
	// Observed instead of acting.
	Act bool
	// Reason explains the answer in the words of an event: "woke 08:56 for
	// Tue 09:00 (0.83 over 4.2 weeks; lead 3m12s)" when Act, why not
	// otherwise.
	Reason string
	// Slot is the start of the slot the answer is about: the next one for
	// PreWake, the current one for Hold and PauseEarly.
	Slot time.Time
	// Share is that slot's share; NextShare the next slot's (PauseEarly).
	Share, NextShare float64
	// Weeks is the history the shares come from.
	Weeks float64
	// Lead is the pre-wake's lead (PreWake only).
	Lead time.Duration
	// Until is the earliest time the answer can change by time alone (no new
	// activity, resume or pause): ask again then. Zero when only new activity
	// can change it.
	Until time.Time
	// observed is Reason as Observe mode reports it.
	observed string
}

// Observed is Reason as a workload in Observe mode reports it: "would wake
// 08:56 for Tue 09:00 (…)".
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
// Ready when the next slot starts (autoResume). It brings the week up to t
// first.
func (f *Forecast) PreWake(t time.Time) Decision {
	f.Advance(t)
	_, _, start := f.slotAt(t)
	next := civil.Slot(civil.Hour(start, f.loc))
	d := Decision{Slot: start, Share: f.shareOf(next), Weeks: f.Weeks(), Lead: f.Lead()}
	wakeAt := start.Add(-d.Lead)
	switch {
	case !f.Learned():
		d.Reason, d.Until = f.learning(), f.learnedAt()
	case f.stale(t):
		d.Reason = fmt.Sprintf("no person for %s: an environment untouched for 4 days is never woken", days(t.Sub(f.lastPerson)))
	case d.Share < BusyShare:
		d.Reason, d.Until = fmt.Sprintf("%s is not usually busy (%.2f over %.1f weeks)", slotName(start, f.loc), d.Share, d.Weeks), wakeAt
	case t.Before(wakeAt):
		d.Reason, d.Until = fmt.Sprintf("%s is usually busy; waking at %s", slotName(start, f.loc), wakeAt.In(f.loc).Format("15:04:05")), wakeAt
	default:
		return d.acted("woke", "would wake", fmt.Sprintf("%s for %s (%.2f over %.1f weeks; lead %s)",
			t.In(f.loc).Format("15:04"), slotName(start, f.loc), d.Share, d.Weeks, d.Lead))
	}
	if d.Until.Before(t) || d.Until.Equal(t) {
		// This slot's moment has passed: the next slot's is the one to watch.
		d.Until = start
	}
	return d
}

// Hold says whether a workload awake at t is not to be paused for idleness:
// its current slot is usually busy and a person was active within HoldWithin
// (autoResume). It brings the week up to t first.
func (f *Forecast) Hold(t time.Time) Decision {
	f.Advance(t)
	current, share, next := f.slotAt(t)
	d := Decision{Slot: current, Share: share, Weeks: f.Weeks(), Until: next}
	since := t.Sub(f.lastPerson)
	switch {
	case !f.Learned():
		d.Reason = f.learning()
	case share < BusyShare:
		d.Reason = fmt.Sprintf("%s is not usually busy (%.2f over %.1f weeks)", slotName(d.Slot, f.loc), share, d.Weeks)
	case f.lastPerson.IsZero() || since >= HoldWithin:
		d.Reason, d.Until = "no person within 2h", time.Time{}
	default:
		if end := f.lastPerson.Add(HoldWithin); end.Before(next) {
			d.Until = end
		}
		return d.acted("held awake", "would hold awake", fmt.Sprintf("in %s (%.2f over %.1f weeks; a person %s ago)",
			slotName(d.Slot, f.loc), share, d.Weeks, since.Round(time.Second)))
	}
	return d
}

// PauseEarly says whether a workload awake at t, last active at
// lastActivity, is to be paused before idleAfter: idle PauseEarlyIdle while
// this slot and the next are expected quiet (pauseEarly). A workload that
// asks (wake mode Ask) never pauses early. It brings the week up to t first.
func (f *Forecast) PauseEarly(t, lastActivity time.Time, ask bool) Decision {
	f.Advance(t)
	current, share, next := f.slotAt(t)
	nextSlot := civil.Slot(civil.Hour(next, f.loc))
	d := Decision{Slot: current, Share: share, NextShare: f.shareOf(nextSlot), Weeks: f.Weeks(), Until: next}
	idle := t.Sub(lastActivity)
	name := fmt.Sprintf("%s and %s", slotName(d.Slot, f.loc), next.In(f.loc).Format("15:04"))
	switch {
	case ask:
		d.Reason, d.Until = "wake mode Ask never pauses early", time.Time{}
	case !f.Learned():
		d.Reason, d.Until = f.learning(), f.learnedAt()
	case share >= QuietShare || d.NextShare >= QuietShare:
		d.Reason = fmt.Sprintf("%s are not expected quiet (%.2f and %.2f over %.1f weeks)", name, share, d.NextShare, d.Weeks)
	case idle < PauseEarlyIdle:
		d.Reason, d.Until = fmt.Sprintf("idle %s of %s", idle.Round(time.Second), PauseEarlyIdle), lastActivity.Add(PauseEarlyIdle)
	default:
		return d.acted("paused early", "would pause early", fmt.Sprintf("at %s: %s are expected quiet (%.2f and %.2f over %.1f weeks; idle %s)",
			t.In(f.loc).Format("15:04"), name, share, d.NextShare, d.Weeks, idle.Round(time.Second)))
	}
	return d
}

func (f *Forecast) shareOf(slot int) float64 { return float64(f.share[slot]) / shareScale }

func (f *Forecast) stale(t time.Time) bool {
	return f.lastPerson.IsZero() || t.Sub(f.lastPerson) >= StaleAfter
}

func (f *Forecast) learning() string {
	return fmt.Sprintf("learning: %s of history, acts after 7 days", days(time.Duration(f.folds)*time.Hour))
}

// learnedAt is when the first full week of history ends.
func (f *Forecast) learnedAt() time.Time {
	return civil.HourStart(f.hour+int64(HistoryHours)-int64(f.folds), f.loc)
}

// slotName names a slot by its start: "Tue 09:00".
func slotName(start time.Time, loc *time.Location) string {
	return start.In(loc).Format("Mon 15:04")
}

// days writes a duration in days with one decimal: "4.2 days".
func days(d time.Duration) string {
	return fmt.Sprintf("%.1f days", d.Hours()/civil.HoursPerDay)
}
