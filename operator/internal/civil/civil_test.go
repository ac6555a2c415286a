package civil

import (
	"testing"
	"time"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestAt(t *testing.T) {
	berlin, newYork := zone(t, "Europe/Berlin"), zone(t, "America/New_York")
	day := func(loc *time.Location, y int, m time.Month, d int) int64 {
		n, _ := Day(time.Date(y, m, d, 12, 0, 0, 0, loc), loc)
		return n
	}
	for _, tc := range []struct {
		name   string
		loc    *time.Location
		day    int64
		minute int
		want   string
	}{
		{"an ordinary hour is the wall clock in the zone's offset", berlin, day(berlin, 2026, 3, 27), 8 * 60, "2026-03-27T07:00:00Z"},
		{"the hour Berlin skips starts at the jump", berlin, day(berlin, 2026, 3, 29), 2*60 + 30, "2026-03-29T01:00:00Z"},
		{"the hour after Berlin's jump is in summer time", berlin, day(berlin, 2026, 3, 29), 3 * 60, "2026-03-29T01:00:00Z"},
		{"the hour Berlin repeats is its first occurrence", berlin, day(berlin, 2026, 10, 25), 2*60 + 30, "2026-10-25T00:30:00Z"},
		{"24:00 is the next day's midnight after the repeated hour", berlin, day(berlin, 2026, 10, 25), 24 * 60, "2026-10-25T23:00:00Z"},
		{"the hour New York skips starts at the jump", newYork, day(newYork, 2026, 3, 8), 2*60 + 15, "2026-03-08T07:00:00Z"},
		{"the hour New York repeats is its first occurrence", newYork, day(newYork, 2026, 11, 1), 60 + 30, "2026-11-01T05:30:00Z"},
		{"UTC has no jumps", time.UTC, day(time.UTC, 2026, 3, 29), 2 * 60, "2026-03-29T02:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := At(tc.day, tc.minute, tc.loc); !got.Equal(utc(tc.want)) {
				t.Errorf("At = %s, want %s", got.UTC().Format(time.RFC3339), tc.want)
			}
		})
	}
}

func TestHourAndSlot(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	for _, tc := range []struct {
		name string
		loc  *time.Location
		from string
		to   string
		real time.Duration
	}{
		{"a local week whose clocks go forward is 167 real hours and 168 hour numbers", berlin, "2026-03-22T23:00:00Z", "2026-03-29T22:00:00Z", 167 * time.Hour},
		{"a local week whose clocks go back is 169 real hours and 168 hour numbers", berlin, "2026-10-18T22:00:00Z", "2026-10-25T23:00:00Z", 169 * time.Hour},
		{"an ordinary UTC week is 168 of each", time.UTC, "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z", 168 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := utc(tc.from), utc(tc.to)
			if got := to.Sub(from); got != tc.real {
				t.Fatalf("the case spans %v, want %v", got, tc.real)
			}
			if got := Hour(to, tc.loc) - Hour(from, tc.loc); got != HoursPerWeek {
				t.Errorf("hour numbers = %d, want 168", got)
			}
			if got := Slot(Hour(from, tc.loc)); got != 0 {
				t.Errorf("slot of Monday 00:00 = %d, want 0", got)
			}
			if got := Slot(Hour(to.Add(-time.Minute), tc.loc)); got != HoursPerWeek-1 {
				t.Errorf("slot of Sunday 23:59 = %d, want 167", got)
			}
		})
	}
	if got := Slot(Hour(utc("2026-03-29T01:30:00Z"), berlin)); got != 6*24+3 {
		t.Errorf("the first minutes after Berlin's jump are in slot %d, want Sun 03:00 (147)", got)
	}
	if got := Weekday(-1); got != 2 {
		t.Errorf("Weekday(-1) (1969-12-31, a Wednesday) = %d, want 2", got)
	}
}
