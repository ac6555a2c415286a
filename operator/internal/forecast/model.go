package forecast

import (
	"math"
	"slices"
	"time"

	"napwake.dev/operator/internal/civil"
)

// The price rule (docs/forecast.md#how-it-decides): staying up from the
// idle time e of a stretch to a hold H (both from its start) is worth
//
//	value(H) = cost · P(e ≤ L < H) − E[min(L, H) − e]
//
// in awake minutes, over the kept gaps of length L ≥ e, each weighted by
// how alike its start is to this stretch's: closeness in local time of day,
// same weekday or day type, recency. The best H is always just past a kept
// gap's end (value only rises at a return and falls between them), so only
// those are tried. Nothing pays when no H has a positive value.

// choice is the best hold of an idle stretch and what it was drawn from.
type choice struct {
	// hold is H, from the stretch's start.
	hold time.Duration
	// p is the weighted share of the kept gaps (of at least e) that ended
	// before H, the prior left out.
	p float64
	// weight is the weighted count of those gaps.
	weight float64
	// value is value(H), in minutes.
	value float64
}

type weighted struct {
	at, w float64
}

// alike returns the kept gaps of at least e minutes, weighted by how alike
// their start is to start, sorted by length.
func (f *Forecast) alike(start time.Time, e float64) []weighted {
	day, minute := civil.Day(start, f.loc)
	wd := civil.Weekday(day)
	var out []weighted
	for _, g := range f.gaps {
		if g.length == 0 || float64(g.length) < e {
			continue
		}
		d := abs(minute - g.minute%civil.MinutesPerDay)
		d = min(d, civil.MinutesPerDay-d)
		if d >= todWidth {
			continue
		}
		w := (1 - float64(d)/todWidth) * dayWeight(wd, civil.Weekday(g.day), otherDayGap) * recency(abs64(day-g.day))
		out = append(out, weighted{at: float64(g.length), w: w})
	}
	slices.SortFunc(out, func(a, b weighted) int { return cmpFloat(a.at, b.at) })
	return out
}

// best returns the hold H in (e, hi] of an idle stretch begun at start that
// maximises value(H), counting prior more weight of gaps with no return;
// false when no gap is alike, without a prior when the gaps weigh under
// minWeight, or when none pays.
func (f *Forecast) best(start time.Time, e, hi time.Duration, prior float64) (choice, bool) {
	em := math.Floor(e.Minutes())
	gs := f.alike(start, em)
	var z float64
	for _, g := range gs {
		z += g.w
	}
	if z == 0 || (prior == 0 && z < minWeight) {
		return choice{weight: z}, false
	}
	z += prior // a gap with no return: little evidence holds little
	cost, capM, hiM := f.set.cost(), maxGap.Minutes(), hi.Minutes()
	out := choice{weight: z}
	var mass, spent float64 // weight returned before H, and their awake minutes
	for i, g := range gs {
		if g.at >= capM {
			break // no return within the cap
		}
		mass += g.w
		spent += g.w * (g.at - em)
		if i+1 < len(gs) && gs[i+1].at == g.at {
			continue
		}
		h := g.at + 1 // a minute past the return: the pause comes after it
		if h > hiM {
			break
		}
		v := (cost*mass - spent - (z-mass)*(h-em)) / z
		if v > out.value {
			out.value, out.hold, out.p = v, time.Duration(h)*time.Minute, mass/(z-prior)
		}
	}
	out.weight -= prior
	return out, out.value > 0
}

// plan is a day's pre-wake: woken at wake to be Ready at arrive, held until
// giveUp.
type plan struct {
	wake, arrive, giveUp time.Time
	// p is the weighted share of the days with nobody yet at arrive on
	// which someone came by giveUp; weight their weighted count.
	p, weight, value float64
}

// planDay returns day's pre-wake, drawn from the first arrivals of the
// ArrivalDays-1 days before it alike in weekday or day type: the arrive and
// giveUp minutes that maximise the same price rule as a hold over all those
// days, among those where, on the days nobody came before arrive, someone
// came by giveUp with chance PreWakeSure or more; false when none pays.
func (f *Forecast) planDay(day int64) (plan, bool) { return f.planDayKnown(day, day) }

// planDayKnown is planDay from the arrivals of the days before known only:
// a day to come is planned from what is known today, not from the log's
// entries of four weeks before it, which its place still holds.
func (f *Forecast) planDayKnown(day, known int64) (plan, bool) {
	wd := civil.Weekday(day)
	var days []weighted                                        // minute of arrival, or +Inf for nobody
	for d := day - ArrivalDays + 1; d < min(day, known); d++ { // day-ArrivalDays shares today's place
		a := f.arrivals[place(d)]
		w := dayWeight(wd, civil.Weekday(d), 0) * recency(day-d)
		if a == arrivalUnknown || w == 0 {
			continue
		}
		at := math.Inf(1)
		if a != arrivalNone {
			at = float64(a)
		}
		days = append(days, weighted{at: at, w: w})
	}
	slices.SortFunc(days, func(a, b weighted) int { return cmpFloat(a.at, b.at) })
	lead, cost := f.Lead().Minutes(), f.set.cost()
	var all float64
	for _, d := range days {
		all += d.w
	}
	if all < minWeight {
		return plan{weight: all}, false
	}
	var best plan
	var bestW, bestG float64
	for i, a := range days {
		if math.IsInf(a.at, 1) || (i > 0 && days[i-1].at == a.at) {
			continue
		}
		var z float64 // days with nobody before a.at: the wake happens on them
		for _, d := range days[i:] {
			z += d.w
		}
		var mass, spent float64
		for j, g := range days[i:] {
			if math.IsInf(g.at, 1) || g.at-a.at > MaxHoldPast.Minutes() {
				break
			}
			mass += g.w
			spent += g.w * (g.at - a.at + lead)
			if i+j+1 < len(days) && days[i+j+1].at == g.at {
				continue
			}
			// The value is over all alike days (on those with someone before
			// the arrival minute there is no wake, and no gain); the chance
			// over the days it wakes on.
			p := mass / z
			v := (cost*mass - spent - (z-mass)*(g.at+1-a.at+lead)) / all
			if p >= PreWakeSure && v > best.value {
				best = plan{p: p, weight: z, value: v}
				bestW, bestG = a.at, g.at+1
			}
		}
	}
	if best.value <= 0 {
		return best, false
	}
	best.arrive = civil.At(day, int(bestW), f.loc)
	best.wake = best.arrive.Add(-f.Lead())
	best.giveUp = civil.At(day, int(bestG), f.loc)
	return best, true
}

// dayWeight weighs a gap or arrival on weekday b for a question on weekday
// a (Monday 0).
func dayWeight(a, b int, other float64) float64 {
	switch {
	case a == b:
		return sameWeekday
	case (a >= 5) == (b >= 5):
		return sameDayType
	}
	return other
}

// recency halves a weight every halfLifeDays.
func recency(ageDays int64) float64 { return math.Exp2(-float64(ageDays) / halfLifeDays) }

func abs(a int) int {
	if a < 0 {
		return -a
	}
	return a
}

func abs64(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
