package civil

import (
	"testing"
	"time"
)

// utc is a time of 2026 in UTC.
func utc(m time.Month, d, hh, mm int) time.Time { return time.Date(2026, m, d, hh, mm, 0, 0, time.UTC) }

func TestAt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		zone   string
		date   time.Time // noon UTC of the local date
		minute int
		want   time.Time
	}{
		{"an ordinary hour is the wall clock in the zone's offset", "Europe/Berlin", utc(3, 27, 12, 0), 8 * 60, utc(3, 27, 7, 0)},
		{"the hour Berlin skips starts at the jump", "Europe/Berlin", utc(3, 29, 12, 0), 2*60 + 30, utc(3, 29, 1, 0)},
		{"the hour after Berlin's jump is in summer time", "Europe/Berlin", utc(3, 29, 12, 0), 3 * 60, utc(3, 29, 1, 0)},
		{"the hour Berlin repeats is its first occurrence", "Europe/Berlin", utc(10, 25, 12, 0), 2*60 + 30, utc(10, 25, 0, 30)},
		{"24:00 is the next day's midnight after the repeated hour", "Europe/Berlin", utc(10, 25, 12, 0), 24 * 60, utc(10, 25, 23, 0)},
		{"the hour New York skips starts at the jump", "America/New_York", utc(3, 8, 12, 0), 2*60 + 15, utc(3, 8, 7, 0)},
		{"the hour New York repeats is its first occurrence", "America/New_York", utc(11, 1, 12, 0), 60 + 30, utc(11, 1, 5, 30)},
		{"UTC has no jumps", "UTC", utc(3, 29, 12, 0), 2 * 60, utc(3, 29, 2, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc, err := time.LoadLocation(tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			day, _ := Day(tc.date, time.UTC)
			if got := At(day, tc.minute, loc); !got.Equal(tc.want) {
				t.Errorf("At = %s, want %s", got.UTC(), tc.want)
			}
		})
	}
}

func TestHourAndSlot(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		loc  *time.Location
		from time.Time
		to   time.Time
		real time.Duration
	}{
		{"a local week whose clocks go forward is 167 real hours and 168 hour numbers", berlin, utc(3, 22, 23, 0), utc(3, 29, 22, 0), 167 * time.Hour},
		{"a local week whose clocks go back is 169 real hours and 168 hour numbers", berlin, utc(10, 18, 22, 0), utc(10, 25, 23, 0), 169 * time.Hour},
		{"an ordinary UTC week is 168 of each", time.UTC, utc(3, 2, 0, 0), utc(3, 9, 0, 0), 168 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := tc.from, tc.to
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
	if got := Slot(Hour(utc(3, 29, 1, 30), berlin)); got != 6*24+3 {
		t.Errorf("the first minutes after Berlin's jump are in slot %d, want Sun 03:00 (147)", got)
	}
	if got := Weekday(-1); got != 2 {
		t.Errorf("Weekday(-1) (1969-12-31, a Wednesday) = %d, want 2", got)
	}
}
