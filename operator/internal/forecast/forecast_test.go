package forecast

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// local is a wall-clock time in loc.
func local(loc *time.Location, y int, m time.Month, d, hh, mm int) time.Time {
	return time.Date(y, m, d, hh, mm, 0, 0, loc)
}

// visitDaily records a person at minute 30 of each hour given (09:30 for 9),
// local, on every weekday of the days from first, and a 60-second resume.
func visitDaily(f *Forecast, first time.Time, days int, hours ...int) {
	for i := range days {
		d := first.AddDate(0, 0, i)
		if wd := d.Weekday(); wd == time.Saturday || wd == time.Sunday {
			continue
		}
		for _, h := range hours {
			f.RecordPerson(time.Date(d.Year(), d.Month(), d.Day(), h, 30, 0, 0, f.Location()))
		}
	}
	f.RecordResume(time.Minute)
}

func TestPreWake(t *testing.T) {
	utc := time.UTC
	berlin, newYork := zone(t, "Europe/Berlin"), zone(t, "America/New_York")
	march2 := local(utc, 2026, 3, 2, 0, 0) // a Monday
	for _, tc := range []struct {
		name string
		// The forecast begins on the Monday begin, a person comes at 09:30 on
		// each weekday of the first days days, and at each of more.
		begin time.Time
		days  int
		more  []time.Time
		at    time.Time
		act   bool
		why   string
	}{
		{"a new workload with no history does not act", march2, 1, nil, local(utc, 2026, 3, 3, 8, 58), false,
			"learning: 1.3 days of history, acts after 7 days"},
		{"after a full week of 09:30 visits it wakes at 08:58 for Tue 09:00", march2, 8, nil, local(utc, 2026, 3, 10, 8, 58), true,
			"woke 08:58 for Tue 09:00 (1.00 over 1.2 weeks; lead 2m0s)"},
		{"a minute before the lead it waits", march2, 8, nil, local(utc, 2026, 3, 10, 8, 57), false,
			"Tue 09:00 is usually busy; waking at 08:58:00"},
		{"a slot nobody uses wakes nothing", march2, 8, nil, local(utc, 2026, 3, 10, 13, 58), false,
			"Tue 14:00 is not usually busy (0.00 over 1.2 weeks)"},
		{"after the 167-hour week Berlin's 09:00 is still 09:00 local (07:00Z, not 08:00Z)", local(berlin, 2026, 3, 16, 0, 0), 14, nil,
			local(berlin, 2026, 3, 30, 8, 58), true, "woke 08:58 for Mon 09:00 (1.00 over 2.0 weeks; lead 2m0s)"},
		{"after the 169-hour week New York's 09:00 is 09:00 EST", local(newYork, 2026, 10, 19, 0, 0), 15, nil,
			local(newYork, 2026, 11, 3, 8, 58), true, "woke 08:58 for Tue 09:00 (1.00 over 2.2 weeks; lead 2m0s)"},
		// The last visit before the week off is on Friday March 27.
		{"in a week off it still wakes within 4 days of the last visit", march2, 26, nil, local(utc, 2026, 3, 31, 8, 58), true,
			"woke 08:58 for Tue 09:00 (1.00 over 4.2 weeks; lead 2m0s)"},
		{"in a week off it stops once nobody came for 4 days", march2, 26, nil, local(utc, 2026, 4, 1, 8, 58), false,
			"no person for 5.0 days: an environment untouched for 4 days is never woken"},
		{"back from the week off, the first morning is not woken: nobody came for 10 days", march2, 26, nil, local(utc, 2026, 4, 6, 8, 58), false,
			"no person for 10.0 days: an environment untouched for 4 days is never woken"},
		{"back from the week off, the second morning is woken: the share decayed but is still busy", march2, 26,
			[]time.Time{local(utc, 2026, 4, 6, 9, 30)}, local(utc, 2026, 4, 7, 8, 58), true,
			"woke 08:58 for Tue 09:00 (0.64 over 5.2 weeks; lead 2m0s)"},
		{"an abandoned preview (used Mon-Wed twice, then never) is never woken again", march2, 0,
			[]time.Time{local(utc, 2026, 3, 2, 10, 15), local(utc, 2026, 3, 3, 10, 15), local(utc, 2026, 3, 4, 10, 15),
				local(utc, 2026, 3, 9, 10, 15), local(utc, 2026, 3, 10, 10, 15), local(utc, 2026, 3, 11, 10, 15)},
			local(utc, 2026, 3, 16, 9, 58), false, "no person for 5.0 days: an environment untouched for 4 days is never woken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New(tc.begin.Location(), tc.begin)
			visitDaily(f, tc.begin, tc.days, 9)
			for _, m := range tc.more {
				f.RecordPerson(m)
			}
			if d := f.PreWake(tc.at); d.Act != tc.act || d.Reason != tc.why {
				t.Errorf("PreWake = %v %q, want %v %q", d.Act, d.Reason, tc.act, tc.why)
			}
		})
	}
}

func TestShareDecay(t *testing.T) {
	f := New(time.UTC, local(time.UTC, 2026, 3, 2, 0, 0))
	slot := 9 // Mon 09:00
	want := []float64{1, 1, 0.547, 0.333, 0.571}
	for week, hit := range []bool{true, true, false, false, true} {
		if hit {
			f.RecordPerson(local(time.UTC, 2026, 3, 2+7*week, 9, 10))
		}
		f.Advance(local(time.UTC, 2026, 3, 2+7*week, 10, 0))
		// (d·s·D + hit) / (1 + d·D), d = 2^-1/2, D the weeks before.
		// Stored rounded down: under 1/255 lost a week, decaying like the
		// share itself, so under 1/255 / (1 - d) = 3.4/255 in all.
		if got := f.Shares()[slot]; got > want[week]+1e-9 || got < want[week]-3.5/255 {
			t.Errorf("week %d: share %.3f, want %.3f", week+1, got, want[week])
		}
	}
	if got := f.Shares()[slot+1]; got != 0 {
		t.Errorf("Mon 10:00, never used, has share %.3f", got)
	}
}

func TestDSTSlots(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	t.Run("the hour the clocks skip ends quiet and the week still has 168 slots", func(t *testing.T) {
		f := New(berlin, local(berlin, 2026, 3, 23, 0, 0))
		f.RecordPerson(time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)) // Sun 01:30 CET
		f.RecordPerson(time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)) // Sun 03:30 CEST
		f.Advance(local(berlin, 2026, 3, 30, 0, 0))
		s := f.Shares()
		if s[6*24+1] != 1 || s[6*24+2] != 0 || s[6*24+3] != 1 {
			t.Errorf("Sun 01, 02, 03 = %.2f %.2f %.2f, want 1 0 1", s[6*24+1], s[6*24+2], s[6*24+3])
		}
		if f.Weeks() != 1 {
			t.Errorf("a 167-hour week is %.3f weeks of history, want 1", f.Weeks())
		}
	})
	t.Run("both real hours of the repeated hour fill one slot, once", func(t *testing.T) {
		f := New(berlin, local(berlin, 2026, 10, 19, 0, 0))
		f.RecordPerson(time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)) // Sun 02:30 CEST
		f.RecordPerson(time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC)) // Sun 02:30 CET
		f.Advance(local(berlin, 2026, 10, 26, 0, 0))
		if s := f.Shares(); s[6*24+2] != 1 || s[6*24+3] != 0 {
			t.Errorf("Sun 02, 03 = %.2f %.2f, want 1 0", s[6*24+2], s[6*24+3])
		}
		if f.Weeks() != 1 {
			t.Errorf("a 169-hour week is %.3f weeks of history, want 1", f.Weeks())
		}
	})
}

func TestHold(t *testing.T) {
	utc := time.UTC
	busy := func() *Forecast { // Mon-Fri 09:00-17:00 busy for two weeks
		f := New(utc, local(utc, 2026, 3, 2, 0, 0))
		visitDaily(f, local(utc, 2026, 3, 2, 0, 0), 14, 9, 10, 11, 12, 13, 14, 15, 16)
		return f
	}
	for _, tc := range []struct {
		name   string
		person time.Time
		at     time.Time
		act    bool
		until  time.Time
		reason string
	}{
		{"a busy slot with a person 37 minutes ago holds it until the next slot", local(utc, 2026, 3, 16, 13, 23), local(utc, 2026, 3, 16, 14, 0), true,
			local(utc, 2026, 3, 16, 15, 0), "held awake in Mon 14:00 (1.00 over 2.1 weeks; a person 37m0s ago)"},
		{"the hold ends two hours after the person", local(utc, 2026, 3, 16, 12, 50), local(utc, 2026, 3, 16, 14, 30), true,
			local(utc, 2026, 3, 16, 14, 50), "held awake in Mon 14:00 (1.00 over 2.1 weeks; a person 1h40m0s ago)"},
		{"a person two hours ago no longer holds it", local(utc, 2026, 3, 16, 12, 30), local(utc, 2026, 3, 16, 14, 30), false,
			time.Time{}, "no person within 2h"},
		{"a quiet slot does not hold it", local(utc, 2026, 3, 16, 17, 10), local(utc, 2026, 3, 16, 17, 40), false,
			local(utc, 2026, 3, 16, 18, 0), "Mon 17:00 is not usually busy (0.00 over 2.1 weeks)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := busy()
			f.RecordPerson(tc.person)
			d := f.Hold(tc.at)
			if d.Act != tc.act || d.Reason != tc.reason || !d.Until.Equal(tc.until) {
				t.Errorf("Hold = %v %q until %v, want %v %q until %v", d.Act, d.Reason, d.Until, tc.act, tc.reason, tc.until)
			}
		})
	}
}

func TestPauseEarly(t *testing.T) {
	utc := time.UTC
	f := New(utc, local(utc, 2026, 3, 2, 0, 0))
	visitDaily(f, local(utc, 2026, 3, 2, 0, 0), 14, 9)
	last := local(utc, 2026, 3, 16, 20, 50)
	f.RecordPerson(last) // an evening visit, in quiet hours
	for _, tc := range []struct {
		name   string
		at     time.Time
		ask    bool
		act    bool
		reason string
	}{
		{"idle 15 minutes in quiet hours pauses early", last.Add(16 * time.Minute), false, true,
			"paused early at 21:06: Mon 21:00 and 22:00 are expected quiet (0.00 and 0.00 over 2.1 weeks; idle 16m0s)"},
		{"idle 14 minutes waits", last.Add(14 * time.Minute), false, false, "idle 14m0s of 15m0s"},
		{"a workload that asks never pauses early", last.Add(16 * time.Minute), true, false, "wake mode Ask never pauses early"},
		{"a quiet hour before a busy one does not pause early", local(utc, 2026, 3, 17, 8, 30), false, false,
			"Tue 08:00 and 09:00 are not expected quiet (0.00 and 1.00 over 2.2 weeks)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := f.PauseEarly(tc.at, last, tc.ask)
			if d.Act != tc.act || d.Reason != tc.reason {
				t.Errorf("PauseEarly = %v %q, want %v %q", d.Act, d.Reason, tc.act, tc.reason)
			}
		})
	}
}

func TestObserved(t *testing.T) {
	f := New(time.UTC, local(time.UTC, 2026, 3, 2, 0, 0))
	visitDaily(f, local(time.UTC, 2026, 3, 2, 0, 0), 8, 9)
	d := f.PreWake(local(time.UTC, 2026, 3, 10, 8, 58))
	if want := "would wake 08:58 for Tue 09:00 (1.00 over 1.2 weeks; lead 2m0s)"; d.Observed() != want {
		t.Errorf("Observed = %q, want %q", d.Observed(), want)
	}
	if d = f.PreWake(local(time.UTC, 2026, 3, 10, 13, 0)); d.Observed() != d.Reason {
		t.Errorf("a decision not to act reads the same observed: %q vs %q", d.Observed(), d.Reason)
	}
}

func TestResumeP90(t *testing.T) {
	f := New(time.UTC, time.Unix(0, 0))
	if got := f.ResumeP90(); got != DefaultResume {
		t.Errorf("with no resumes p90 = %v, want DefaultResume", got)
	}
	for s := 1; s <= 10; s++ {
		f.RecordResume(time.Duration(s*10)*time.Second - time.Millisecond) // rounded up to whole seconds
	}
	if got := f.ResumeP90(); got != 90*time.Second {
		t.Errorf("p90 of 10..100 s = %v, want 1m30s", got)
	}
	f.RecordResume(20 * time.Hour) // replaces the 10 s one; clamped to 18h12m15s
	if got, want := f.ResumeP90(), 100*time.Second; got != want {
		t.Errorf("after one very slow resume p90 = %v, want %v (the slowest but one)", got, want)
	}
	if got := f.Lead(); got != 100*time.Second+Buffer {
		t.Errorf("Lead = %v, want p90 + Buffer", got)
	}
}

func TestLateAndLongGaps(t *testing.T) {
	utc := time.UTC
	f := New(utc, local(utc, 2026, 3, 2, 0, 0))
	f.Advance(local(utc, 2026, 3, 2, 12, 0))
	f.RecordPerson(local(utc, 2026, 3, 2, 9, 30)) // reported late: its hour has ended
	if s := f.Shares()[9]; s != 0 || !f.LastPerson().Equal(local(utc, 2026, 3, 2, 9, 30)) {
		t.Errorf("a late report: slot share %.2f, last person %v; want 0 and the report's time", s, f.LastPerson())
	}
	visitDaily(f, local(utc, 2026, 3, 3, 0, 0), 20, 10)
	f.Advance(local(utc, 2036, 3, 2, 0, 0)) // ten years later: bounded work, everything forgotten
	for i, s := range f.Shares() {
		if s != 0 {
			t.Fatalf("slot %d still has share %.3f after ten years", i, s)
		}
	}
	if w := f.Weeks(); w < 521 || w > 523 {
		t.Errorf("ten years are %.1f weeks of history", w)
	}
	if d := f.PreWake(local(utc, 2036, 3, 3, 9, 58)); d.Act || !strings.HasPrefix(d.Reason, "no person for ") {
		t.Errorf("after ten years PreWake = %v %q", d.Act, d.Reason)
	}
}

func TestOnFold(t *testing.T) {
	utc := time.UTC
	f := New(utc, local(utc, 2026, 3, 2, 0, 0))
	visitDaily(f, local(utc, 2026, 3, 2, 0, 0), 7, 9)
	type fold struct {
		slot      int
		busy, hit bool
	}
	var got []fold
	f.OnFold(func(slot int, busy, hit bool) { got = append(got, fold{slot, busy, hit}) })
	f.RecordPerson(local(utc, 2026, 3, 9, 10, 5)) // Mon 10:05: folds up to Mon 09:00 of week 2
	f.Advance(local(utc, 2026, 3, 9, 11, 0))
	want := []fold{{8, false, false}, {9, true, false}, {10, false, true}}
	if len(got) < 3 || !slices.Equal(got[len(got)-3:], want) {
		t.Errorf("last folds %v, want %v", got, want)
	}
}
