package forecast

import (
	"time"

	"napwake.dev/operator/internal/civil"
)

// In returns the forecast counted in loc instead: what it learned moves
// with the instants it was learned at (docs/forecast.md#settings). Every
// workload learns from its first day, in UTC unless spec.forecast names a
// zone, so turning the forecast on with a timeZone must not start afresh.
//
// A gap keeps its instant and length, its local start read in loc (to the
// 5 minutes the ring keeps). A day's first arrival moves to the day of loc
// its instant falls in, the earliest where two land on one day; a day
// nobody came moves with its noon; days loc has not watched stay unknown.
// The hour being filled is the one of loc holding its start; the latest
// person, the resume times and the hours counted do not depend on a zone.
func (f *Forecast) In(loc *time.Location) *Forecast {
	if loc.String() == f.zone {
		return f
	}
	start := civil.HourStart(f.hour, f.loc)
	g := New(loc, start, f.set)
	g.hit, g.folds, g.lastPerson, g.resumes = f.hit, f.folds, f.lastPerson, f.resumes
	g.next, g.count = f.next, f.count
	for i, old := range f.gaps {
		if old.length == 0 {
			continue
		}
		day, minute := civil.Day(civil.At(old.day, old.minute%civil.MinutesPerDay, f.loc), loc)
		g.gaps[i] = gap{day: day, minute: weekMinute(day, minute), length: old.length}
	}
	today, newToday := f.day(), g.day()
	for d := today - ArrivalDays + 1; d <= today; d++ {
		a := f.arrivals[place(d)]
		var minute int
		switch {
		case a < civil.MinutesPerDay:
			minute = int(a)
		case a == arrivalNone:
			minute = civil.MinutesPerDay / 2
		default:
			continue
		}
		day, m := civil.Day(civil.At(d, minute, f.loc), loc)
		if day > newToday || newToday-day >= ArrivalDays {
			continue
		}
		at := &g.arrivals[place(day)]
		switch {
		case a == arrivalNone:
			if *at == arrivalUnknown {
				*at = arrivalNone
			}
		case *at >= civil.MinutesPerDay || uint16(m) < *at:
			*at = uint16(m)
		}
	}
	return g
}
