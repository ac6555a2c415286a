package forecast

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// berlin is the tests' zone: its clocks go forward on 29 March 2026 (a
// week of 167 hours) and back on 25 October (169).
var berlin = func() *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err) // the tests cannot run without the zone database
	}
	return loc
}()

// local is a wall-clock time of 2026 in loc.
func local(loc *time.Location, m time.Month, d, hh, mm int) time.Time {
	return time.Date(2026, m, d, hh, mm, 0, 0, loc)
}

// session is a person active every 5 minutes from..to, local, on date.
type session struct{ fromH, fromM, toH, toM int }

// officeDay: 09:00 to 12:00, lunch, 13:00 to 14:00, a meeting elsewhere,
// 15:05 to 17:30. Its gaps: 60m at 12:00, 65m at 14:00, the night.
var officeDay = []session{{9, 0, 12, 0}, {13, 0, 14, 0}, {15, 5, 17, 30}}

// nightShift: 22:00 to 23:45, a break, 00:30 to 06:00 the next morning.
var nightShift = []session{{22, 0, 23, 45}, {24, 30, 30, 0}}

// live records sessions on each day from first for days days whose weekday
// keep says, and a 60-second resume.
func live(f *Forecast, first time.Time, days int, keep func(time.Weekday) bool, sessions []session) {
	liveIn(f.Location(), first, days, keep, sessions, f)
}

// liveIn is live for forecasts that may count in other zones than loc, the
// sessions' zone.
func liveIn(loc *time.Location, first time.Time, days int, keep func(time.Weekday) bool, sessions []session, fs ...*Forecast) {
	for i := range days {
		d := first.AddDate(0, 0, i)
		if !keep(d.Weekday()) {
			continue
		}
		for _, s := range sessions {
			from := time.Date(d.Year(), d.Month(), d.Day(), s.fromH, s.fromM, 0, 0, loc)
			to := time.Date(d.Year(), d.Month(), d.Day(), s.toH, s.toM, 0, 0, loc)
			for t := from; !t.After(to); t = t.Add(5 * time.Minute) {
				for _, f := range fs {
					f.RecordPerson(t)
				}
			}
		}
	}
	for _, f := range fs {
		f.RecordResume(time.Minute)
	}
}

// officeWeeks is a forecast begun on Monday 9 February 2026 in Berlin that
// lived days of officeDay on weekdays.
func officeWeeks(set Settings, days int) *Forecast {
	begin := local(berlin, 2, 9, 0, 0)
	f := New(berlin, begin, set)
	live(f, begin, days, weekdays, officeDay)
	return f
}

func weekdays(d time.Weekday) bool { return d != time.Saturday && d != time.Sunday }
func everyDay(time.Weekday) bool   { return true }

const idle = 30 * time.Minute

// lived is what a forecast lived before a test asks it: begun at begin,
// sessions on days days from it whose weekday keep says.
type lived struct {
	begin    time.Time
	days     int
	keep     func(time.Weekday) bool
	sessions []session
}

func (l lived) forecast(set Settings) *Forecast {
	f := New(berlin, l.begin, set)
	live(f, l.begin, l.days, l.keep, l.sessions)
	return f
}

func TestHold(t *testing.T) {
	office := lived{local(berlin, 2, 9, 0, 0), 22, weekdays, officeDay}
	on := func(m time.Month, d, hh, mm int) time.Time { return local(berlin, m, d, hh, mm) }
	for _, tc := range []struct {
		name  string
		lived lived
		// Hold is asked at at, idle since last.
		last, at time.Time
		until    time.Time // zero: no hold
		why      string
	}{
		{"a new workload with no history does not hold", lived{on(3, 2, 0, 0), 0, weekdays, officeDay},
			on(3, 3, 14, 0), on(3, 3, 14, 30), time.Time{}, "too few gaps like this one (0.0 weighted) to hold"},
		{"after three weeks of office days it holds through Tuesday's 65-minute meeting", office, on(3, 3, 14, 0), on(3, 3, 14, 30), on(3, 3, 15, 6),
			"held awake until 15:06 (36m past idleAfter): after 14:00 on Tuesdays someone came back within 66m in 100 % of 7 weighted gaps; a cold start is worth 90m"},
		{"it does not hold at the evening, when nobody comes back within 4 hours", office, on(3, 3, 17, 30), on(3, 3, 18, 0), time.Time{},
			"no hold pays: after 17:30 on Tuesdays returns within 4h past idleAfter are too rare in 5 weighted gaps for a cold start worth 90m"},
		{"across the week the clocks go forward (167 hours) the hold keeps the local hour", lived{on(3, 16, 0, 0), 22, weekdays, officeDay},
			on(4, 7, 14, 0), on(4, 7, 14, 30), on(4, 7, 15, 6), ""},
		{"across the week the clocks go back (169 hours) the hold keeps the local hour", lived{on(10, 12, 0, 0), 22, weekdays, officeDay},
			on(11, 3, 14, 0), on(11, 3, 14, 30), on(11, 3, 15, 6), ""},
		{"after a week off, the first meeting gap is held again: the gaps are older but still there", office,
			on(3, 10, 14, 0), on(3, 10, 14, 30), on(3, 10, 15, 6), ""},
		{"an abandoned preview, untouched for 4 days, is never held", office, on(3, 2, 17, 30), on(3, 6, 17, 30), time.Time{},
			"no person for 4.0 days: an environment untouched for 4 days is never woken or held"},
		{"a night shift's break across Monday 00:00 is held", lived{on(2, 8, 0, 0), 21, everyDay, nightShift},
			on(3, 1, 23, 45), on(3, 2, 0, 15), on(3, 2, 0, 31), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.lived.forecast(Settings{IdleAfter: idle})
			f.RecordPerson(tc.last)
			d := f.Hold(tc.at)
			if d.Act != !tc.until.IsZero() || (d.Act && !d.Until.Equal(tc.until)) {
				t.Errorf("Hold: act %v until %v (%s), want until %v", d.Act, d.Until, d.Reason, tc.until)
			}
			if tc.why != "" && d.Reason != tc.why {
				t.Errorf("Hold's reason\n %q, want\n %q", d.Reason, tc.why)
			}
			if d.Act && !strings.HasPrefix(d.Observed(), "would hold awake until ") {
				t.Errorf("Observe reports %q", d.Observed())
			}
		})
	}
}

// TestHoldEventNamesItsFigures: the event says until when, how far past
// idleAfter, the time of week, the hold, the chance, the weighted gaps and
// the price, in the words of docs/forecast.md#events.
func TestHoldEventNamesItsFigures(t *testing.T) {
	f := officeWeeks(Settings{IdleAfter: idle, ColdStartCost: 2 * time.Hour}, 22)
	f.RecordPerson(local(berlin, 3, 3, 14, 0))
	d := f.Hold(local(berlin, 3, 3, 14, 40))
	re := regexp.MustCompile(`^held awake until \d\d:\d\d \(\d+m past idleAfter\): after \d\d:\d\d on [A-Z][a-z]+days someone came back within \d+m in \d+ % of \d+ weighted gaps; a cold start is worth 120m$`)
	if !d.Act || !re.MatchString(d.Reason) {
		t.Errorf("Hold's reason %q does not name its figures", d.Reason)
	}
}

func TestPreWake(t *testing.T) {
	begin := local(berlin, 2, 9, 0, 0)
	for _, tc := range []struct {
		name     string
		days     int
		keep     func(time.Weekday) bool
		sessions []session
		last, at time.Time
		act      bool
		until    time.Time
		why      string
	}{
		{"a new workload with no history does not wake", 0, weekdays, officeDay,
			local(berlin, 2, 9, 17, 0), local(berlin, 2, 10, 8, 58), false, local(berlin, 2, 11, 0, 0),
			"no pre-wake pays on Tuesdays at a cold start worth 90m"},
		{"after three weeks of 09:00 arrivals it wakes at 08:58 on Tuesday", 22, weekdays, officeDay,
			time.Time{}, local(berlin, 3, 3, 8, 58), true, local(berlin, 3, 3, 9, 1),
			"woke 08:58 to be Ready at 09:00, held until 09:01: on Tuesdays someone came by 09:01 on 100 % of 5.2 weighted days (lead 2m0s); a cold start is worth 90m"},
		{"a minute before, it waits for the wake", 22, weekdays, officeDay,
			time.Time{}, local(berlin, 3, 3, 8, 57), false, local(berlin, 3, 3, 8, 58), "waking at 08:58 for 09:00"},
		{"nobody comes on Saturdays: no wake", 26, weekdays, officeDay,
			time.Time{}, local(berlin, 3, 7, 8, 58), false, local(berlin, 3, 8, 0, 0),
			"no pre-wake pays on Saturdays at a cold start worth 90m"},
		{"after a week off it does not wake: untouched for 4 days", 22, weekdays, officeDay,
			time.Time{}, local(berlin, 3, 10, 8, 58), false, time.Time{},
			"no person for 7.6 days: an environment untouched for 4 days is never woken or held"},
		{"an abandoned preview, used daily, then left: never woken after 4 days", 12, everyDay, officeDay,
			time.Time{}, local(berlin, 2, 25, 8, 58), false, time.Time{},
			"no person for 4.6 days: an environment untouched for 4 days is never woken or held"},
		{"a night shift's Sunday 22:00 arrival is woken for, across the week's end", 20, everyDay, nightShift,
			time.Time{}, local(berlin, 3, 1, 21, 58), true, local(berlin, 3, 1, 22, 1), ""},
		{"in the week the clocks go forward the wake keeps the local hour", 50, weekdays, officeDay,
			time.Time{}, local(berlin, 3, 31, 8, 58), true, local(berlin, 3, 31, 9, 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New(berlin, begin, Settings{IdleAfter: idle})
			live(f, begin, tc.days, tc.keep, tc.sessions)
			if !tc.last.IsZero() {
				f.RecordPerson(tc.last)
			}
			d := f.PreWake(tc.at)
			if d.Act != tc.act || !d.Until.Equal(tc.until) {
				t.Errorf("PreWake: act %v until %v (%s), want %v until %v", d.Act, d.Until, d.Reason, tc.act, tc.until)
			}
			if tc.why != "" && d.Reason != tc.why {
				t.Errorf("PreWake's reason\n %q, want\n %q", d.Reason, tc.why)
			}
			if !d.Act {
				return
			}
			// Nobody came: it is held until the give-up time, then paused.
			at := tc.at.Add(time.Minute)
			if h := f.Hold(at); !h.Act || !h.Until.Equal(tc.until) {
				t.Errorf("Hold after the pre-wake: act %v until %v (%s), want until %v", h.Act, h.Until, h.Reason, tc.until)
			}
			if h := f.Hold(tc.until); h.Act {
				t.Errorf("Hold at the give-up time acts: %s", h.Reason)
			}
		})
	}
}

func TestPauseEarly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		idleAfter  time.Duration
		days       int
		ask        bool
		last, at   time.Time
		act        bool
		until      time.Time
		reasonHead string
	}{
		{"the evening, when nobody comes back, pauses after 15 minutes", 2 * time.Hour, 22, false,
			local(berlin, 3, 3, 17, 30), local(berlin, 3, 3, 17, 45), true, time.Time{}, "paused early at 17:45, idle 15m0s of 2h0m0s: after 17:30 on Tuesdays"},
		{"under 15 minutes idle it waits for the floor", 2 * time.Hour, 22, false,
			local(berlin, 3, 3, 17, 30), local(berlin, 3, 3, 17, 40), false, local(berlin, 3, 3, 17, 45), "idle 10m0s of 15m0s"},
		{"lunch, when someone comes back within the hour, is waited through", 2 * time.Hour, 22, false,
			local(berlin, 3, 3, 12, 0), local(berlin, 3, 3, 12, 15), false, local(berlin, 3, 3, 12, 16), "waiting pays"},
		{"a workload that asks never pauses early", 2 * time.Hour, 22, true,
			local(berlin, 3, 3, 17, 30), local(berlin, 3, 3, 17, 45), false, time.Time{}, "wake mode Ask never pauses early"},
		{"a new workload does not pause early", 2 * time.Hour, 0, false,
			local(berlin, 3, 3, 17, 30), local(berlin, 3, 3, 17, 45), false, local(berlin, 3, 3, 17, 46), "too few gaps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := officeWeeks(Settings{IdleAfter: tc.idleAfter, PauseEarly: true}, tc.days)
			f.RecordPerson(tc.last)
			d := f.PauseEarly(tc.at, tc.last, tc.ask)
			if d.Act != tc.act || !d.Until.Equal(tc.until) || !strings.HasPrefix(d.Reason, tc.reasonHead) {
				t.Errorf("PauseEarly: act %v until %v (%s), want %v until %v (%s…)", d.Act, d.Until, d.Reason, tc.act, tc.until, tc.reasonHead)
			}
		})
	}
}

// TestGapsKept: only gaps of at least idleAfter (15 minutes with
// pauseEarly) are kept, at most Gaps of them, capped at 4 hours.
func TestGapsKept(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		set   Settings
		gaps  []time.Duration
		want  []int
		count int
	}{
		{"shorter than idleAfter is not kept", Settings{IdleAfter: idle}, []time.Duration{20 * time.Minute, 40 * time.Minute}, []int{40}, 1},
		{"pauseEarly keeps from 15 minutes", Settings{IdleAfter: idle, PauseEarly: true}, []time.Duration{14 * time.Minute, 20 * time.Minute}, []int{20}, 1},
		{"a gap over 4 hours is kept as 4 hours", Settings{IdleAfter: idle}, []time.Duration{9 * time.Hour}, []int{240}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New(time.UTC, at, tc.set)
			tm := at
			f.RecordPerson(tm)
			for _, g := range tc.gaps {
				tm = tm.Add(g)
				f.RecordPerson(tm)
			}
			var got []int
			for _, g := range f.gaps {
				if g.length > 0 {
					got = append(got, g.length)
				}
			}
			if f.count != tc.count || len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("kept %v (count %d), want %v", got, f.count, tc.want)
			}
		})
	}
	f := New(time.UTC, at, Settings{IdleAfter: idle})
	for i := range Gaps + 10 {
		f.RecordPerson(at.Add(time.Duration(i) * time.Hour))
	}
	if f.count != Gaps || f.next != (Gaps+9)%Gaps {
		t.Errorf("after %d gaps the ring holds %d, next %d", Gaps+9, f.count, f.next)
	}
}

// TestPrice: coldStartCost sets the price, and maxExtraAwake scales it down
// in proportion while the extra awake time is over the cap.
func TestPrice(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  Settings
		want float64
	}{
		{"unset is 90 minutes", Settings{}, 90},
		{"coldStartCost sets it", Settings{ColdStartCost: 2 * time.Hour}, 120},
		{"under the cap it is whole", Settings{MaxExtraAwake: 20, ExtraAwake: 0.1}, 90},
		{"at twice the cap it is halved", Settings{ColdStartCost: time.Hour, MaxExtraAwake: 20, ExtraAwake: 0.4}, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.set.cost(); got != tc.want {
				t.Errorf("price %.1f minutes, want %.1f", got, tc.want)
			}
		})
	}
	// A cheaper cold start holds less: the meeting gap is not worth 36
	// minutes at a price of 30.
	f := officeWeeks(Settings{IdleAfter: idle, ColdStartCost: 30 * time.Minute}, 22)
	f.RecordPerson(local(berlin, 3, 3, 14, 0))
	if d := f.Hold(local(berlin, 3, 3, 14, 30)); d.Act {
		t.Errorf("a 30-minute price holds: %s", d.Reason)
	}
}

func TestNextPreWake(t *testing.T) {
	begin := local(berlin, 2, 9, 0, 0)
	for _, tc := range []struct {
		name        string
		days        int
		at          time.Time
		ok          bool
		wake, until time.Time
	}{
		{"a new workload plans none", 0, local(berlin, 2, 9, 7, 0), false, time.Time{}, time.Time{}},
		{"before the day's wake, today's", 22, local(berlin, 3, 3, 7, 0), true, local(berlin, 3, 3, 8, 58), local(berlin, 3, 3, 9, 1)},
		{"between the wake and the give-up time, today's still", 22, local(berlin, 3, 3, 9, 0), true, local(berlin, 3, 3, 8, 58), local(berlin, 3, 3, 9, 1)},
		{"past today's give-up time, tomorrow's", 22, local(berlin, 3, 3, 9, 30), true, local(berlin, 3, 4, 8, 58), local(berlin, 3, 4, 9, 1)},
		{"on a Saturday, Monday's: nobody comes at weekends", 26, local(berlin, 3, 7, 7, 0), true, local(berlin, 3, 9, 8, 58), local(berlin, 3, 9, 9, 1)},
		{"after a week off, none: untouched for 4 days", 22, local(berlin, 3, 10, 7, 0), false, time.Time{}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New(berlin, begin, Settings{IdleAfter: idle})
			live(f, begin, tc.days, weekdays, officeDay)
			wake, arrive, until, ok := f.NextPreWake(tc.at)
			if ok != tc.ok || !wake.Equal(tc.wake) || !until.Equal(tc.until) {
				t.Errorf("NextPreWake(%v) = wake %v until %v, %v; want wake %v until %v, %v", tc.at, wake, until, ok, tc.wake, tc.until, tc.ok)
			}
			if ok && arrive.Sub(wake) != f.Lead() {
				t.Errorf("the wake comes %v before the arrival, want the lead %v", arrive.Sub(wake), f.Lead())
			}
			if !ok || tc.at.Before(wake) {
				return
			}
			if d := f.PreWake(tc.at); !d.Act || !d.Until.Equal(until) {
				t.Errorf("PreWake at %v disagrees: act %v until %v (%s)", tc.at, d.Act, d.Until, d.Reason)
			}
		})
	}
}

// TestNextPreWakeReadsOnlyKnownDays: the arrival log's places of the days
// to come still hold the entries of four weeks before them; a plan for a
// day to come must not read them as if they were days just past.
func TestNextPreWakeReadsOnlyKnownDays(t *testing.T) {
	begin := local(berlin, 2, 9, 0, 0)
	f := New(berlin, begin, Settings{IdleAfter: idle})
	live(f, begin, 22, weekdays, officeDay)
	f.Advance(local(berlin, 3, 3, 9, 30)) // Tuesday, past today's give-up time
	today := f.day()
	friday := today + 3
	before, ok := f.planDayKnown(friday, today)
	if !ok {
		t.Fatal("no plan for Friday to compare with")
	}
	for d := today; d < friday; d++ {
		f.arrivals[place(d)] = 5 * 60 // 05:00, as if from four weeks ago
	}
	if after, ok := f.planDayKnown(friday, today); !ok || after != before {
		t.Errorf("Friday's plan read the places of the days to come: %+v, %v; want %+v", after, ok, before)
	}
}
