package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"napwake.dev/operator/internal/tools/forecastsim/devhours"
)

// days writes environment a's person (or robot) events at hh:mm UTC on the given days of
// March 2026 (the 2nd is a Monday).
func days(kind string, hhmm []string, ds ...int) string {
	var b strings.Builder
	for _, d := range ds {
		for _, at := range hhmm {
			fmt.Fprintf(&b, "a,2026-03-%02dT%s:00Z,%s\n", d, at, kind)
		}
	}
	return b.String()
}

var (
	firstWeek  = []int{2, 3, 4, 5, 6}
	secondWeek = []int{9, 10, 11, 12, 13}
)

func TestPolicies(t *testing.T) {
	const (
		a        = "a,UTC,60,30m,Request,true,true\n"
		midnight = "a,2026-03-02T00:00:00Z,robot\n"
	)
	type want struct {
		policy string
		c      Counts
	}
	for _, tc := range []struct {
		name   string
		events string
		week   int
		// fromMidnight starts the trace at Monday 00:00 with a robot row,
		// so a full week has ended by Monday 08:58 of week 2.
		fromMidnight bool
		want         []want
	}{
		{
			name:   "a trace that starts at the first visit wakes from the weekdays after it: 09:08 the next Monday",
			events: days("person", []string{"09:10"}, append(firstWeek, secondWeek...)...), week: 2,
			// The first day's arrival is not one (the forecast began at it);
			// Tuesday to Friday's weigh 2, enough. Woken 09:08 (lead: the
			// 60 s resume and a minute), used at 09:10, paused at 09:40.
			want: []want{{"forecast", Counts{AwakeMinutes: 5 * 32, ForecastWakes: 5, ForecastWakesUsed: 5}}},
		},
		{
			name: "a week of 09:10 visits teaches the forecast to wake at 08:58, and each wake is used", fromMidnight: true,
			events: days("person", []string{"09:10"}, append(firstWeek, secondWeek...)...), week: 2,
			want: []want{
				{"idle-only", Counts{ColdStartsPerson: 5, AwakeMinutes: 150}},
				// Observe would also pause early at 09:25: nobody ever came back
				// within 4 hours of 09:10. None is a regret.
				{"forecast-observe", Counts{ColdStartsPerson: 5, AwakeMinutes: 150, ForecastWakes: 5, ForecastWakesUsed: 5, EarlyPauses: 5}},
				// Woken 09:08; idle at 09:40, and nobody came back within 4
				// hours after 09:10: no hold.
				{"forecast", Counts{AwakeMinutes: 5 * 32, ForecastWakes: 5, ForecastWakesUsed: 5}},
			},
		},
		{
			name: "a morning nobody comes is an unused wake, awake until its idle pause", fromMidnight: true,
			events: days("person", []string{"09:10"}, 2, 3, 4, 5, 6, 9, 10, 12, 13), week: 2,
			// Wednesday's wake gives up at 09:11 and pauses at its idle pause.
			want: []want{{"forecast", Counts{AwakeMinutes: 4*32 + 30, ForecastWakes: 5, ForecastWakesUsed: 4}}},
		},
		{
			name: "no forecast wake 4 days after the last person", fromMidnight: true,
			events: days("person", []string{"09:10"}, firstWeek...) + days("robot", []string{"12:00"}, 13), week: 2,
			want: []want{{"forecast", Counts{AwakeMinutes: 2 * 30, ForecastWakes: 2}}}, // Monday's and Tuesday's
		},
		{
			name: "busy hours hold it awake between visits instead of pausing", fromMidnight: true,
			events: days("person", []string{"09:10", "10:20"}, append(firstWeek, secondWeek...)...), week: 2,
			want: []want{
				{"idle-only", Counts{ColdStartsPerson: 10, AwakeMinutes: 300}},
				// Woken 09:08; at 09:40 every gap after 09:10 ended at 10:20:
				// held until 10:21 (90m × 1 − 40m pays), paused at 10:50.
				{"forecast", Counts{AwakeMinutes: 5 * 102, ForecastWakes: 5, ForecastWakesUsed: 5}},
			},
		},
		{
			name: "an early pause needs gaps alike: a new evening has none, an unused morning wake has", fromMidnight: true,
			events: days("person", []string{"09:10"}, firstWeek...) + days("person", []string{"21:00", "21:20"}, 9) + days("person", []string{"21:00"}, 10), week: 2,
			want: []want{
				// Mon 21:00-21:50, Tue 21:00-21:30, and Mon's and Tue's 09:08 wakes, unused.
				{"forecast", Counts{ColdStartsPerson: 2, AwakeMinutes: 50 + 30 + 2*30, ForecastWakes: 2}},
				// The evenings have too few gaps to pause early on (a first
				// 21:00 has none alike); the unused wakes, given up at 09:11
				// with nobody back within 4 hours of 09:10 on any day, pause
				// at 09:23, 15 minutes idle.
				{"forecast+pauseEarly", Counts{ColdStartsPerson: 2, AwakeMinutes: 50 + 30 + 2*15, ForecastWakes: 2, EarlyPauses: 2}},
				// Observe's would-be wakes are never awake to pause early.
				{"forecast-observe", Counts{ColdStartsPerson: 2, AwakeMinutes: 80, ForecastWakes: 2}},
			},
		},
		{
			name:   "the schedule wakes at 08:00 on weekdays and does not pause inside 08:00-19:00",
			events: "a,2026-03-02T07:50:00Z,person\na,2026-03-02T20:00:00Z,person\na,2026-03-03T12:00:00Z,person\n", week: 1,
			want: []want{
				{"idle-only", Counts{ColdStartsPerson: 3, AwakeMinutes: 90}},
				// Mon 07:50-19:00 and 20:00-20:30; Tue 08:00 to the trace's end at 13:00.
				{"schedule", Counts{ColdStartsPerson: 2, AwakeMinutes: 670 + 30 + 300}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := replayText(t, a, tc.events, tc.week)
			if tc.fromMidnight {
				rep = replayText(t, a, midnight+tc.events, tc.week)
			}
			for _, w := range tc.want {
				if got := rep[w.policy].Total; got != w.c {
					t.Errorf("%s: got %+v\nwant %+v", w.policy, got, w.c)
				}
			}
		})
	}
}

// small is a small napwake-devhours-v1 trace: the golden run's size.
func small(seed uint64) *devhours.Trace {
	return devhours.Generate(devhours.Config{Seed: seed, Envs: 16, Weeks: 3})
}

func TestAskingEveryMinuteChangesNothing(t *testing.T) {
	tr := fromDevhours(small(3))
	jumping, _, err := Replay(tr, 2)
	if err != nil {
		t.Fatal(err)
	}
	everyMinute = true
	defer func() { everyMinute = false }()
	stepping, _, err := Replay(tr, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jumping, stepping) {
		t.Errorf("asking the forecast every minute gives another report than asking when its answer can change:\n%+v\n%+v", stepping["forecast"].Total, jumping["forecast"].Total)
	}
	if jumping["forecast"].Total.ForecastWakes == 0 || jumping["forecast+pauseEarly"].Total.EarlyPauses == 0 {
		t.Error("the trace exercises neither pre-wakes nor early pauses")
	}
}

func TestRobotsChangeNothing(t *testing.T) {
	g := small(2)
	with := fromDevhours(g)
	var people []devhours.Event
	for _, e := range g.Events {
		if !e.Robot {
			people = append(people, e)
		}
	}
	if len(people) == len(g.Events) {
		t.Fatal("the trace has no robot events")
	}
	without := fromDevhours(&devhours.Trace{Envs: g.Envs, Events: people})
	// Without robots the trace starts and ends at other times; replay both
	// over the same span.
	without.First, without.Last = with.First, with.Last
	a, _, err := Replay(with, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Replay(without, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("the report changes without the robot rows")
	}
	start, end := with.First, with.Last.Add(time.Hour)
	for i, e := range with.Envs {
		_, _, sa := simulateState(e, Policies[3], start, end, start)
		_, _, sb := simulateState(without.Envs[i], Policies[3], start, end, start)
		if string(sa) != string(sb) {
			t.Errorf("%s: the forecast's state differs without the robot rows", e.Name)
		}
	}
}
