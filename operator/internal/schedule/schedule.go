// Package schedule reads when a workload is to be awake by policy: the
// windows of spec.schedule.awake (or the napwake.dev/awake-hours annotation)
// in an IANA zone, and the override annotations napwake.dev/keep-awake-until
// and napwake.dev/pause-until (docs/design/schedules-forecast.md#schedules).
//
// It is pure: no client and no clock; every question takes the time it is
// asked at. It does not decide what to do about a window (the reconciler
// wakes at a window's start and does not pause inside one); it only says
// where the windows are. Its errors name what is wrong, so they can be shown
// as an InvalidSetting event as they are.
//
// A window is "DAYS HH:MM-HH:MM": DAYS is one day (Mon) or a range (Mon-Fri;
// a range may wrap the week, Fri-Mon is Fri, Sat, Sun and Mon), day names in
// English, three letters or whole, any case. The times are the local wall
// clock in the schedule's zone; the end may be 24:00 (midnight at the end of
// the day). Refused: no hours ("Sun-Mon"), an hour or minute out of range
// ("25:00-19:00", "08:60"), an end at or before its start (a window across
// midnight is two windows), an unknown day, an unknown zone, and "Local"
// (the operator's own zone is not the workload's).
//
// Across DST changes a window keeps its wall-clock hours: Mon-Fri 08:00-19:00
// is eleven real hours every weekday. A window edge inside the hour the
// clocks skip is at the instant they jump; one inside a repeated hour is at
// its first occurrence.
package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"napwake.dev/operator/internal/civil"
)

const (
	// MaxWindows bounds a schedule: more than a window a day for every day
	// of the week is a list nobody can read, and every question walks them.
	MaxWindows = 32
	// maxWindowLen: "Wednesday-Saturday 08:00-19:00" is 30 characters.
	maxWindowLen = 64
	// horizonDays is how far ahead NextStart and End look: every window
	// recurs within a week, and a window lost in a skipped hour one week is
	// there the next.
	horizonDays = 15
)

// ErrNoWindows is returned for a schedule without any window.
var ErrNoWindows = errors.New("no awake windows")

// window is one parsed window: the weekdays it is on (Monday 0) and its
// minutes of the day, start < end ≤ 1440.
type window struct {
	days       [civil.DaysPerWeek]bool
	start, end int
	// text is the window as written, trimmed, for events.
	text string
}

// Schedule is a parsed list of windows in a zone.
type Schedule struct {
	loc     *time.Location
	windows []window
}

// Parse parses windows (the list in spec.schedule.awake) in zone ("" is UTC,
// the API's default).
func Parse(windows []string, zone string) (*Schedule, error) {
	loc, err := LoadZone(zone)
	if err != nil {
		return nil, err
	}
	if len(windows) == 0 {
		return nil, ErrNoWindows
	}
	if len(windows) > MaxWindows {
		return nil, fmt.Errorf("%d awake windows: at most %d", len(windows), MaxWindows)
	}
	s := &Schedule{loc: loc, windows: make([]window, 0, len(windows))}
	for _, text := range windows {
		w, err := parseWindow(text)
		if err != nil {
			return nil, fmt.Errorf("window %q: %w", text, err)
		}
		s.windows = append(s.windows, w)
	}
	return s, nil
}

// ParseList parses the napwake.dev/awake-hours annotation: windows separated
// by commas, "Mon-Fri 08:00-19:00, Sat 10:00-14:00".
func ParseList(value, zone string) (*Schedule, error) {
	parts := strings.Split(value, ",")
	if strings.TrimSpace(value) == "" {
		parts = nil
	}
	return Parse(parts, zone)
}

// LoadZone loads an IANA zone; "" is UTC. An unknown zone, and "Local", are
// errors.
func LoadZone(zone string) (*time.Location, error) {
	if zone == "Local" {
		return nil, errors.New(`time zone "Local": name an IANA zone such as "Europe/Berlin"`)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("time zone %q is not an IANA zone: %w", zone, err)
	}
	return loc, nil
}

func parseWindow(text string) (window, error) {
	w := window{text: strings.Join(strings.Fields(text), " ")}
	if len(text) > maxWindowLen {
		return w, fmt.Errorf("longer than %d characters", maxWindowLen)
	}
	fields := strings.Fields(text)
	switch {
	case len(fields) == 0:
		return w, errors.New(`empty: write "DAYS HH:MM-HH:MM", e.g. "Mon-Fri 08:00-19:00"`)
	case len(fields) == 1:
		return w, fmt.Errorf(`no hours after %q: write "DAYS HH:MM-HH:MM", e.g. "Mon-Fri 08:00-19:00"`, fields[0])
	case len(fields) > 2:
		return w, errors.New(`more than days and hours: write "DAYS HH:MM-HH:MM", e.g. "Mon-Fri 08:00-19:00"`)
	}
	if err := w.parseDays(fields[0]); err != nil {
		return w, err
	}
	from, to, ok := strings.Cut(fields[1], "-")
	if !ok {
		return w, fmt.Errorf("hours %q are not HH:MM-HH:MM", fields[1])
	}
	var err error
	if w.start, err = clock(from, false); err != nil {
		return w, fmt.Errorf("start %w", err)
	}
	if w.end, err = clock(to, true); err != nil {
		return w, fmt.Errorf("end %w", err)
	}
	if w.end <= w.start {
		return w, fmt.Errorf("ends at %s, not after its start %s: a window across midnight is two windows, e.g. \"Mon 22:00-24:00\" and \"Tue 00:00-06:00\"", to, from)
	}
	return w, nil
}

func (w *window) parseDays(text string) error {
	from, to, isRange := strings.Cut(text, "-")
	first, err := weekday(from)
	if err != nil {
		return err
	}
	last := first
	if isRange {
		if last, err = weekday(to); err != nil {
			return err
		}
	}
	for d := first; ; d = (d + 1) % civil.DaysPerWeek {
		w.days[d] = true
		if d == last {
			return nil
		}
	}
}

var dayNames = []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

// weekday reads a day name: three letters or the whole English name.
func weekday(name string) (int, error) {
	n := strings.ToLower(name)
	for i, full := range dayNames {
		if n == full || n == full[:3] {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown day %q: use Mon, Tue, Wed, Thu, Fri, Sat or Sun", name)
}

// clock reads H:MM or HH:MM as minutes of the day; 24:00 only as an end.
func clock(text string, end bool) (int, error) {
	h, m, ok := strings.Cut(text, ":")
	if !ok || len(h) < 1 || len(h) > 2 || len(m) != 2 || !digits(h) || !digits(m) {
		return 0, fmt.Errorf("%q is not HH:MM", text)
	}
	hour, _ := strconv.Atoi(h) // digits only: cannot fail
	minute, _ := strconv.Atoi(m)
	v := hour*60 + minute
	limit := "23:59"
	if end {
		limit = "24:00"
	}
	if minute > 59 || v > civil.MinutesPerDay || (v == civil.MinutesPerDay && !end) {
		return 0, fmt.Errorf("%q is not a time of day (00:00 to %s)", text, limit)
	}
	return v, nil
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// interval is one window on one day, in real time: [start, end), and the
// texts of the windows merged into it.
type interval struct {
	start, end time.Time
	texts      []string
}

// periods returns the windows of the days first..last (day numbers in the
// schedule's zone) as real-time intervals, sorted, with overlapping and
// touching ones merged: one awake period, one start, one end. Windows that a
// DST jump leaves empty are dropped.
func (s *Schedule) periods(first, last int64) []interval {
	var out []interval
	for day := first; day <= last; day++ {
		wd := civil.Weekday(day)
		for _, w := range s.windows {
			if !w.days[wd] {
				continue
			}
			iv := interval{civil.At(day, w.start, s.loc), civil.At(day, w.end, s.loc), []string{w.text}}
			if iv.start.Before(iv.end) {
				out = append(out, iv)
			}
		}
	}
	slices.SortFunc(out, func(a, b interval) int { return a.start.Compare(b.start) })
	merged := out[:0]
	for _, iv := range out {
		if n := len(merged); n > 0 && !iv.start.After(merged[n-1].end) {
			if iv.end.After(merged[n-1].end) {
				merged[n-1].end = iv.end
			}
			if !slices.Contains(merged[n-1].texts, iv.texts[0]) {
				merged[n-1].texts = append(merged[n-1].texts, iv.texts[0])
			}
			continue
		}
		merged = append(merged, iv)
	}
	return merged
}

// Awake reports whether t is inside a window.
func (s *Schedule) Awake(t time.Time) bool {
	day, _ := civil.Day(t, s.loc)
	for _, p := range s.periods(day-1, day+1) {
		if !t.Before(p.start) && t.Before(p.end) {
			return true
		}
	}
	return false
}

// NextStart returns the start of the next awake period strictly after t, or
// the zero time when there is none within the next two weeks (a schedule
// awake all week long has no start ahead).
func (s *Schedule) NextStart(t time.Time) time.Time {
	day, _ := civil.Day(t, s.loc)
	for _, p := range s.periods(day-1, day+horizonDays) {
		if p.start.After(t) {
			return p.start
		}
	}
	return time.Time{}
}

// End returns the end of the awake period t is in (windows that overlap or
// touch count as one period), or the zero time when t is outside every
// window. A period running past the next two weeks reports the end of that
// horizon: ask again then.
func (s *Schedule) End(t time.Time) time.Time {
	day, _ := civil.Day(t, s.loc)
	for _, p := range s.periods(day-1, day+horizonDays) {
		if !t.Before(p.start) && t.Before(p.end) {
			return p.end
		}
	}
	return time.Time{}
}

// Location returns the schedule's zone.
func (s *Schedule) Location() *time.Location { return s.loc }

// Period is one awake period: windows that overlap or touch, as one.
type Period struct {
	// Start and End bound it: [Start, End).
	Start, End time.Time
	// Windows are the windows it is made of, as written ("Mon-Fri
	// 08:00-19:00"), in the order they begin.
	Windows []string
}

// Current returns the awake period t is in; ok is false outside every
// window. Its End is capped as End's is.
func (s *Schedule) Current(t time.Time) (p Period, ok bool) {
	day, _ := civil.Day(t, s.loc)
	// From two weeks back, so a period of windows on several days running
	// starts where it really does (up to that horizon).
	for _, iv := range s.periods(day-horizonDays, day+horizonDays) {
		if !t.Before(iv.start) && t.Before(iv.end) {
			return Period{Start: iv.start, End: iv.end, Windows: iv.texts}, true
		}
	}
	return Period{}, false
}
