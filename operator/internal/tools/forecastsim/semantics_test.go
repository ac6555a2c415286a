package main

import (
	"strings"
	"testing"
)

const envsHeader = "environment,timezone,resume_seconds,idle_after,wake_mode,auto_resume,pause_early\n"

// replayText replays a trace given as text and returns one policy's report.
func replayText(t *testing.T, envs, events string, week int) Report {
	t.Helper()
	tr, err := parseTrace(strings.NewReader(envsHeader+envs), strings.NewReader("environment,time,kind\n"+events), "environments.csv", "events.csv")
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := Replay(tr, week)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// wed writes events of environment a: "person 10:00:59" on Wednesday
// 2026-03-04 (in week 1, which starts on Monday 2026-03-02), or with a whole
// time, "robot 2026-03-09T00:10:00".
func wed(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		kind, at, _ := strings.Cut(e, " ")
		if !strings.Contains(at, "T") {
			at = "2026-03-04T" + at
		}
		b.WriteString("a," + at + "Z," + kind + "\n")
	}
	return b.String()
}

// TestIdleOnly checks each rule of idle-only (docs/bench/forecast.md#method)
// on a tiny trace.
func TestIdleOnly(t *testing.T) {
	const a = "a,UTC,60,30m,Request,true,true\n"
	for _, tc := range []struct {
		name   string
		envs   string
		events string
		week   int
		cold   int
		awake  float64
	}{
		{"one person event is a cold start and 30 minutes awake", a, wed("person 10:00:00"), 1, 1, 30},
		{"a person event while resuming is a cold start too", a, wed("person 10:00:00", "person 10:00:59"), 1, 2, 30 + 59.0/60},
		{"a person event once Ready is not", a, wed("person 10:00:00", "person 10:01:00"), 1, 1, 31},
		{"it pauses at the last person event plus idle_after", a, wed("person 10:00:00", "person 10:20:00"), 1, 1, 50},
		{"an event at exactly that instant finds it paused", a, wed("person 10:00:00", "person 10:30:00"), 1, 2, 60},
		{"an event a second before it keeps it awake", a, wed("person 10:00:00", "person 10:29:59"), 1, 1, 59 + 59.0/60},
		{"it does not pause before it is Ready", "a,UTC,2400,30m,Request,true,true\n", wed("person 10:00:00"), 1, 1, 40},
		{"the trace ends an hour after the last event", "a,UTC,60,2h,Request,true,true\n", wed("person 10:00:00"), 1, 1, 60},
		{"robots never wake it", a, wed("robot 09:00:00", "robot 10:00:00"), 1, 0, 0},
		{"robots do not keep it awake", a, wed("person 10:00:00", "robot 10:20:00", "robot 10:40:00"), 1, 1, 30},
		{"it starts paused at the first event, whoever's", a, wed("robot 09:00:00", "person 09:00:00"), 1, 1, 30},
		{"scoring from week 2 clips awake time at its Monday 00:00 UTC", a, wed("person 2026-03-08T23:50:00", "person 2026-03-09T00:10:00"), 2, 0, 40},
		{"scoring from week 2 counts its cold starts only", a, wed("person 2026-03-08T22:00:00", "person 2026-03-09T10:00:00"), 2, 1, 30},
		{"fractional resume seconds are kept", "a,UTC,0.5,30m,Request,true,true\n", wed("person 10:00:00", "person 10:00:00.4"), 1, 2, 30 + 0.4/60},
		{"environments are independent and the total sums them", a + "b,Europe/Berlin,30,10m,Ask,false,false\n",
			wed("person 10:00:00") + "b,2026-03-04T10:05:00Z,person\nb,2026-03-04T10:20:00Z,person\n", 1, 3, 30 + 10 + 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := replayText(t, tc.envs, tc.events, tc.week)["idle-only"].Total
			if got.ColdStartsPerson != tc.cold || got.AwakeMinutes != round2(tc.awake) {
				t.Errorf("cold starts %d, awake %.2f min; want %d, %.2f", got.ColdStartsPerson, got.AwakeMinutes, tc.cold, round2(tc.awake))
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	const a = "a,UTC,60,30m,Request,true,true\n"
	for _, tc := range []struct {
		name, envs, events, want string
	}{
		{"a missing column is named", "environment,timezone,resume_seconds,wake_mode,auto_resume,pause_early\n", "environment,time,kind\n",
			"environments.csv line 1: header \"environment,timezone,resume_seconds,wake_mode,auto_resume,pause_early\", want \"environment,timezone,resume_seconds,idle_after,wake_mode,auto_resume,pause_early\" (missing idle_after)"},
		{"a short row names its line", envsHeader + a + "b,UTC,60\n", "environment,time,kind\n", "environments.csv line 3: 3 columns, want 7"},
		{"an unknown zone names its line", envsHeader + "a,Mars/Olympus,60,30m,Request,true,true\n", "environment,time,kind\n", `environments.csv line 2: time zone "Mars/Olympus" is not an IANA zone`},
		{"a bad idle_after names its line", envsHeader + "a,UTC,60,half an hour,Request,true,true\n", "environment,time,kind\n", `line 2: idle_after "half an hour" is not a positive Go duration`},
		{"a bad wake mode names its line", envsHeader + "a,UTC,60,30m,request,true,true\n", "environment,time,kind\n", `line 2: wake_mode "request" is neither Request nor Ask`},
		{"a bad boolean names its line", envsHeader + "a,UTC,60,30m,Request,yes,true\n", "environment,time,kind\n", `line 2: auto_resume "yes" is neither true nor false`},
		{"negative resume seconds name their line", envsHeader + "a,UTC,-1,30m,Request,true,true\n", "environment,time,kind\n", `line 2: resume_seconds "-1"`},
		{"a twice-listed environment names its line", envsHeader + a + a, "environment,time,kind\n", `environments.csv line 3: environment "a" is listed twice`},
		{"a bad time names its line", envsHeader + a, "environment,time,kind\na,2026-03-04 10:00,person\n", `events.csv line 2: time "2026-03-04 10:00" is not an RFC 3339 UTC time`},
		{"a time not in UTC names its line", envsHeader + a, "environment,time,kind\na,2026-03-04T10:00:00+01:00,person\n", `events.csv line 2: time "2026-03-04T10:00:00+01:00" is not an RFC 3339 UTC time`},
		{"unsorted events name the line", envsHeader + a, "environment,time,kind\na,2026-03-04T10:00:00Z,person\na,2026-03-04T09:00:00Z,person\n", "events.csv line 3: time 2026-03-04T09:00:00Z is before the previous event's 2026-03-04T10:00:00Z: events must be sorted"},
		{"an unknown environment names its line", envsHeader + a, "environment,time,kind\nb,2026-03-04T10:00:00Z,person\n", `events.csv line 2: environment "b" is not in environments.csv`},
		{"an unknown kind names its line", envsHeader + a, "environment,time,kind\na,2026-03-04T10:00:00Z,human\n", `events.csv line 2: kind "human" is neither person nor robot`},
		{"a broken quote names its line", envsHeader + a, "environment,time,kind\na,\"2026,person\n", "events.csv: parse error on line 2"},
		{"no events is refused", envsHeader + a, "environment,time,kind\n", "events.csv has no events"},
		{"events out of column order are refused", envsHeader + a, "time,environment,kind\n", "events.csv line 1: header \"time,environment,kind\", want \"environment,time,kind\" (columns out of order)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTrace(strings.NewReader(tc.envs), strings.NewReader(tc.events), "environments.csv", "events.csv")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
