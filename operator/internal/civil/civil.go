// Package civil counts local wall-clock days and hours in an IANA zone and
// turns them back into instants, the same way on every day of the year, DST
// changes included. The schedule and the forecast both count in it, so a
// window and a forecast slot agree on what "Tue 09:00" is.
//
// It owns only arithmetic on time.Time and *time.Location: no clock, no
// parsing of user input.
//
// Days are numbered from 1970-01-01 (day 0, a Thursday) by the local date,
// hours as day*24 + local hour. Both only move forward as real time does:
// in a week whose clocks go forward an hour is skipped (167 distinct hours),
// in one whose clocks go back the repeated hour keeps one number for its two
// real hours (169 real hours, 168 numbers).
package civil

import "time"

const (
	// DaysPerWeek and HoursPerDay size the local week.
	DaysPerWeek = 7
	HoursPerDay = 24
	// HoursPerWeek is the number of hourly slots of a local week.
	HoursPerWeek = DaysPerWeek * HoursPerDay
	// MinutesPerDay is the length of a local day on the wall clock.
	MinutesPerDay = HoursPerDay * 60
	secondsPerDay = 86400
	// mondayOffset: day 0 (1970-01-01) was a Thursday, weekday 3 counting
	// Monday as 0.
	mondayOffset = 3
	// probe is how far before and after a wall-clock time the zone's offsets
	// are sampled: more than a day, so the offsets on both sides of any one
	// transition are seen whatever the zone's offset.
	probe = 26 * time.Hour
)

// Day returns the local date of t in loc as a day number and the minute of
// that day on the wall clock.
func Day(t time.Time, loc *time.Location) (day int64, minute int) {
	lt := t.In(loc)
	y, m, d := lt.Date()
	return floorDiv(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), secondsPerDay), lt.Hour()*60 + lt.Minute()
}

// Hour returns the local hour number of t in loc: day*24 + the wall clock's
// hour.
func Hour(t time.Time, loc *time.Location) int64 {
	day, minute := Day(t, loc)
	return day*HoursPerDay + int64(minute/60)
}

// Weekday returns the weekday of a day number, Monday 0 to Sunday 6.
func Weekday(day int64) int {
	return int(floorMod(day+mondayOffset, DaysPerWeek))
}

// Slot returns the slot of the local week of an hour number: Monday 00:00
// is 0, Sunday 23:00 is 167.
func Slot(hour int64) int {
	return Weekday(floorDiv(hour, HoursPerDay))*HoursPerDay + int(floorMod(hour, HoursPerDay))
}

// At returns the first instant whose wall clock in loc reads minute of day
// (0 to 1440; 1440 is the next day's 00:00). A time the clocks skip (the hour
// lost when they go forward) gives the instant they jump; a time they repeat
// gives its first occurrence.
func At(day int64, minute int, loc *time.Location) time.Time {
	wall := time.Unix(day*secondsPerDay+int64(minute)*60, 0).UTC() // the wall clock read as UTC
	_, before := wall.Add(-probe).In(loc).Zone()
	_, after := wall.Add(probe).In(loc).Zone()
	var best time.Time
	for _, off := range []int{before, after} {
		t := wall.Add(-time.Duration(off) * time.Second)
		if _, got := t.In(loc).Zone(); got == off && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	if !best.IsZero() {
		return best
	}
	// Skipped: read with the offset before the jump, the wall time lands
	// after it; the jump is where that instant's zone period starts.
	t := wall.Add(-time.Duration(before) * time.Second)
	if start, _ := t.In(loc).ZoneBounds(); !start.IsZero() && start.Before(t) {
		return start
	}
	return t
}

// HourStart returns the first instant of an hour number.
func HourStart(hour int64, loc *time.Location) time.Time {
	return At(floorDiv(hour, HoursPerDay), int(floorMod(hour, HoursPerDay))*60, loc)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }
