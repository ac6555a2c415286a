package devhours

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func TestGenerate(t *testing.T) {
	cfg := Config{Seed: 7, Envs: 40, Weeks: 3}
	a, b := Generate(cfg), Generate(cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gives two traces")
	}
	cfg.Seed = 8
	if reflect.DeepEqual(a, Generate(cfg)) {
		t.Fatal("two seeds give the same trace")
	}
	names := map[string]bool{}
	kinds := map[string]int{}
	for _, e := range a.Envs {
		if names[e.Name] {
			t.Errorf("environment %s twice", e.Name)
		}
		names[e.Name] = true
		if _, err := time.LoadLocation(e.Zone); err != nil {
			t.Errorf("%s: %v", e.Name, err)
		}
		kinds[e.Name[:2]]++
	}
	if len(a.Envs) != 40 || kinds["st"] != 5 || kinds["qa"] != 8 || kinds["pr"] != 27 {
		t.Errorf("%d environments by kind %v, want 40: 5 staging, 8 QA, 27 previews", len(a.Envs), kinds)
	}
	end := start.AddDate(0, 0, 21)
	var robots, people int
	for i, e := range a.Events {
		if e.Time.Before(start) || !e.Time.Before(end) || e.Time.Nanosecond() != 0 {
			t.Fatalf("event %d at %v: outside the three weeks or not whole seconds", i, e.Time)
		}
		if i > 0 && e.Time.Before(a.Events[i-1].Time) {
			t.Fatalf("event %d is out of order", i)
		}
		if !names[e.Env] {
			t.Fatalf("event %d of unknown environment %s", i, e.Env)
		}
		if e.Robot {
			robots++
		} else {
			people++
		}
	}
	if robots == 0 || people == 0 {
		t.Errorf("%d person and %d robot events, want both", people, robots)
	}
	var envs, events bytes.Buffer
	if err := a.WriteCSV(&envs, &events); err != nil {
		t.Fatal(err)
	}
	if got := bytes.Count(events.Bytes(), []byte("\n")); got != len(a.Events)+1 {
		t.Errorf("events.csv has %d lines, want %d", got, len(a.Events)+1)
	}
}
