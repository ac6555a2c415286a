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
			name:   "a trace that starts at the first visit has not a full week by the next Monday 08:58",
			events: days("person", []string{"09:10"}, append(firstWeek, secondWeek...)...), week: 2,
			// Monday 09:10 is a cold start; the busy 09:00 slot holds it to 10:00.
			want: []want{{"forecast", Counts{ColdStartsPerson: 1, AwakeMinutes: 50 + 4*62, ForecastWakes: 4, ForecastWakesUsed: 4}}},
		},
		{
			name: "a week of 09:10 visits teaches the forecast to wake at 08:58, and each wake is used", fromMidnight: true,
			events: days("person", []string{"09:10"}, append(firstWeek, secondWeek...)...), week: 2,
			want: []want{
				{"idle-only", Counts{ColdStartsPerson: 5, AwakeMinutes: 150}},
				{"forecast-observe", Counts{ColdStartsPerson: 5, AwakeMinutes: 150, ForecastWakes: 5, ForecastWakesUsed: 5}},
				// Woken 08:58; idle at 09:40 in a busy slot, a person 30 minutes
				// ago: held until 10:00, a quiet slot.
				{"forecast", Counts{AwakeMinutes: 5 * 62, ForecastWakes: 5, ForecastWakesUsed: 5}},
			},
		},
		{
			name: "a morning nobody comes is an unused wake, awake until its idle pause", fromMidnight: true,
			events: days("person", []string{"09:10"}, 2, 3, 4, 5, 6, 9, 10, 12, 13), week: 2,
			want: []want{{"forecast", Counts{AwakeMinutes: 4*62 + 30, ForecastWakes: 5, ForecastWakesUsed: 4}}},
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
				// Woken 08:58, held from 09:40 to 10:20 and from 10:50 to 11:00.
				{"forecast", Counts{AwakeMinutes: 5 * 122, ForecastWakes: 5, ForecastWakesUsed: 5}},
			},
		},
		{
			name: "an early pause in quiet hours saves minutes, and a person back before idleAfter is a regret", fromMidnight: true,
			events: days("person", []string{"09:10"}, firstWeek...) + days("person", []string{"21:00", "21:20"}, 9) + days("person", []string{"21:00"}, 10), week: 2,
			want: []want{
				// Mon 21:00-21:50, Tue 21:00-21:30, and Mon's and Tue's 08:58 wakes, unused.
				{"forecast", Counts{ColdStartsPerson: 2, AwakeMinutes: 50 + 30 + 2*30, ForecastWakes: 2}},
				// Mon: paused 21:15, woken 21:20 (a regret), paused 21:35; Tue: paused 21:15.
				{"forecast+pauseEarly", Counts{ColdStartsPerson: 3, AwakeMinutes: 15 + 15 + 15 + 2*30, ForecastWakes: 2, EarlyPauses: 3, EarlyPauseRegrets: 1}},
				// Observe would pause at the same times: the 21:15 one a regret.
				{"forecast-observe", Counts{ColdStartsPerson: 2, AwakeMinutes: 80, ForecastWakes: 2, EarlyPauses: 3, EarlyPauseRegrets: 1}},
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
