package kinds

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"napwake.dev/operator/internal/tools/forecastsim/devhours"
)

// TestGenerate: every kind is the same for a seed and differs between
// seeds, its events are sorted, and each kind has its shape: night shifts
// cross midnight, weekend environments see nobody on weekdays, a holiday
// week is empty for a team, robots are on half the environments.
func TestGenerate(t *testing.T) {
	for _, kind := range Names {
		t.Run(kind, func(t *testing.T) {
			t.Parallel() // each kind is a few seconds under -race
			tr := generate(t, kind, 1)
			a, b, c := digest(t, tr), digest(t, generate(t, kind, 1)), digest(t, generate(t, kind, 2))
			if a != b || a == c {
				t.Errorf("seed 1 twice %s and %s, seed 2 %s: want the same, then another", a, b, c)
			}
			if !slices.IsSortedFunc(tr.Events, func(x, y devhours.Event) int { return x.Time.Compare(y.Time) }) {
				t.Error("events are not sorted by time")
			}
			zone := map[string]*time.Location{}
			for _, e := range tr.Envs {
				zone[e.Name], _ = time.LoadLocation(e.Zone)
			}
			robots := map[string]bool{}
			for _, e := range tr.Events {
				lt := e.Time.In(zone[e.Env])
				switch wd := lt.Weekday(); {
				case e.Robot:
					robots[e.Env] = true
				case kind == "weekend" && wd != time.Saturday && wd != time.Sunday:
					t.Fatalf("%s: a person on a weekday (%v)", e.Env, lt)
				case kind == "nightshift" && lt.Hour() >= 11 && lt.Hour() < 18:
					t.Fatalf("%s: a night shift at %v", e.Env, lt)
				}
			}
			if want := map[bool]int{true: 6, false: 12}[kind == "robots"]; len(robots) != want {
				t.Errorf("robots on %d environments, want %d", len(robots), want)
			}
		})
	}
	if _, err := Generate("lunar", 1, 1, 4); err == nil {
		t.Error("an unknown kind is generated")
	}
}

func generate(t *testing.T, kind string, seed uint64) *devhours.Trace {
	t.Helper()
	tr, err := Generate(kind, seed, 12, 4)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func digest(t *testing.T, tr *devhours.Trace) string {
	t.Helper()
	var envs, events bytes.Buffer
	if err := tr.WriteCSV(&envs, &events); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(envs.Bytes(), events.Bytes()...))
	return hex.EncodeToString(sum[:8])
}
