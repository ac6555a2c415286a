package idlelevel

import (
	"slices"
	"time"
)

// Hours is how many hourly lows are kept: one day.
const Hours = 24

// MinMarginMilli is the least a pod must rise above the idle level to be
// busy: an idle Go server answering its readiness probe measured 0.7–0.8m
// over metrics-server's 15-second windows on the test bed, so 2m is clear
// of an idle process's noise and well below what anyone's use costs.
const MinMarginMilli = 2

// None marks an hour of Lows without a sample (the workload was paused,
// or never quiet).
const None = -1

// State is what has been learned: one entry per hour for the last Hours
// hours, newest last, each the lowest sample of its hour in millicores or
// None, and the start of the newest entry's hour.
type State struct {
	// Lows are millicores or None, one per hour, newest last.
	Lows []int64
	// Hour is the start of the hour Lows' last entry covers; zero when
	// nothing has been learned.
	Hour time.Time
}

// Observe folds in one sample (the busiest pod's millicores at now). It
// reports whether the state changed, so the caller writes status only
// then: within an hour that only happens when a new low is seen.
func Observe(s State, now time.Time, milli int64) (State, bool) {
	if milli < 0 {
		return s, false
	}
	hour := now.UTC().Truncate(time.Hour)
	if len(s.Lows) == 0 || s.Hour.IsZero() {
		return State{Lows: []int64{milli}, Hour: hour}, true
	}
	switch {
	case hour.Before(s.Hour):
		// A clock that stepped back: keep what is known.
		return s, false
	case hour.Equal(s.Hour):
		last := s.Lows[len(s.Lows)-1]
		if last != None && last <= milli {
			return s, false
		}
		lows := slices.Clone(s.Lows)
		lows[len(lows)-1] = milli
		return State{Lows: lows, Hour: hour}, true
	}
	gap := int(min(hour.Sub(s.Hour)/time.Hour, Hours))
	lows := slices.Clone(s.Lows)
	for range gap - 1 {
		lows = append(lows, None)
	}
	lows = append(lows, milli)
	if len(lows) > Hours {
		lows = lows[len(lows)-Hours:]
	}
	return State{Lows: lows, Hour: hour}, true
}

// MinHours is how many hours of the last day must have a sample before the
// level is trusted. Within the first hours a workload in steady use looks
// like one idling at that use, and learning it would pause the workload
// under its users; until then the level is 0, so any use above the margin
// keeps it up.
const MinHours = 6

// Level is the learned idle level in millicores, and whether it has been
// learned: the 25th percentile (nearest rank) of the hourly lows, once
// MinHours of them are known.
func Level(s State) (int64, bool) {
	sorted := make([]int64, 0, len(s.Lows))
	for _, l := range s.Lows {
		if l != None {
			sorted = append(sorted, l)
		}
	}
	if len(sorted) < MinHours {
		return 0, false
	}
	slices.Sort(sorted)
	rank := (len(sorted)*25 + 99) / 100 // ceil(n/4), at least 1
	return sorted[rank-1], true
}

// BusyAbove is the usage, in millicores, at or above which a pod counts as
// busy given idle level level: half as much again as the level, and at
// least MinMarginMilli more.
func BusyAbove(level int64) int64 {
	return level + max(level/2, MinMarginMilli)
}

// Busy says whether a sample of milli millicores is busy for state s.
func Busy(s State, milli int64) bool {
	level, _ := Level(s)
	return milli >= BusyAbove(level)
}
