package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// FuzzTrace reads any two files as a trace (anyone can hand the simulator a
// trace). What must never happen: a panic; a replay of an accepted trace
// that does not end; cold starts or awake minutes below zero.
func FuzzTrace(f *testing.F) {
	f.Add("a,UTC,60,30m,Request,true,true\n", "a,2026-03-04T10:00:00Z,person\na,2026-03-04T10:30:00Z,person\n")
	f.Add("a,Europe/Berlin,0.5,1ns,Ask,true,true\nb,America/New_York,86400,168h,Request,false,false\n", "b,2026-03-29T01:00:00Z,robot\na,2026-03-29T01:00:00.000000001Z,person\n")
	f.Add("a,UTC,1e3,1m,Request,true,true\n", "a,2026-03-04T10:00:00Z,person\n\"a\",2026-03-04T10:00:00Z,robot\n")
	f.Add("a,Local,60,30m,Request,true,true\n", "a,2026-03-04T10:00:00Z,person\n")
	f.Fuzz(func(t *testing.T, envs, events string) {
		tr, err := parseTrace(strings.NewReader(envsHeader+envs), strings.NewReader("environment,time,kind\n"+events), "environments.csv", "events.csv")
		if err != nil || tr.Last.Sub(tr.First) > 30*24*time.Hour {
			return // refused, or too long to replay in a fuzz run
		}
		rep, _, err := Replay(tr, 1)
		if err != nil {
			t.Fatal(err)
		}
		for name, r := range rep {
			if r.Total.ColdStartsPerson < 0 || r.Total.AwakeMinutes < 0 {
				t.Fatalf("%s: %+v", name, r.Total)
			}
		}
	})
}
