// Package devhours generates napwake-devhours-v1, a synthetic trace of
// developers' working hours on Kubernetes environments: team staging, PR
// previews that are abandoned, and sporadic QA environments, used by people
// with their own start and end times, lunch, meetings, weekends, days off and
// holidays, in several time zones across the March DST changes, plus robots
// (uptime monitors, CI smoke tests, link unfurlers, crawlers).
//
// It is written as people behave, not as the forecast would like: it owns no
// knowledge of the forecast, and the forecast's tuning never changes it. A
// seed gives the same trace on every machine (math/rand/v2 PCG sources, one
// per person and per environment, so a change to one part does not reshuffle
// the rest).
package devhours

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// Name is the trace's name and version.
const Name = "napwake-devhours-v1"

// Config sizes a trace.
type Config struct {
	// Seed picks the trace.
	Seed uint64
	// Envs is the number of environments (200 in the benchmark).
	Envs int
	// Weeks is the trace's length (8 in the benchmark).
	Weeks int
}

// Default is the benchmark's size for a seed.
func Default(seed uint64) Config { return Config{Seed: seed, Envs: 200, Weeks: 8} }

// start is the trace's first Monday: 2026-03-02, so the eight weeks cross
// the US (Mar 8) and EU (Mar 29) clocks going forward and Sydney's going back
// (Apr 5).
var start = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// Env is one environment's line of environments.csv.
type Env struct {
	Name          string
	Zone          string
	ResumeSeconds int
	IdleAfter     time.Duration
	WakeMode      string // Request | Ask
	AutoResume    bool
	PauseEarly    bool
}

// Event is one line of events.csv.
type Event struct {
	Env   string
	Time  time.Time
	Robot bool
}

// Trace is a generated trace.
type Trace struct {
	Envs   []Env
	Events []Event // sorted by time, then environment, person before robot
}

// Generate makes the trace of cfg.
func Generate(cfg Config) *Trace {
	w := newWorld(cfg)
	tr := &Trace{}
	for _, e := range w.envs {
		tr.Envs = append(tr.Envs, e.Env)
		for _, t := range e.persons {
			if !t.Before(w.from) && t.Before(w.to) {
				tr.Events = append(tr.Events, Event{Env: e.Name, Time: t})
			}
		}
		for _, t := range e.robots {
			if !t.Before(w.from) && t.Before(w.to) {
				tr.Events = append(tr.Events, Event{Env: e.Name, Time: t, Robot: true})
			}
		}
	}
	slices.SortFunc(tr.Events, func(a, b Event) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Env, b.Env); c != 0 {
			return c
		}
		return cmp.Compare(boolInt(a.Robot), boolInt(b.Robot))
	})
	return tr
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteCSV writes environments.csv and events.csv in the trace format.
func (tr *Trace) WriteCSV(envs, events io.Writer) error {
	ew := csv.NewWriter(envs)
	if err := ew.Write([]string{"environment", "timezone", "resume_seconds", "idle_after", "wake_mode", "auto_resume", "pause_early"}); err != nil {
		return fmt.Errorf("writing environments: %w", err)
	}
	for _, e := range tr.Envs {
		row := []string{e.Name, e.Zone, strconv.Itoa(e.ResumeSeconds), e.IdleAfter.String(), e.WakeMode, strconv.FormatBool(e.AutoResume), strconv.FormatBool(e.PauseEarly)}
		if err := ew.Write(row); err != nil {
			return fmt.Errorf("writing environments: %w", err)
		}
	}
	ew.Flush()
	if err := ew.Error(); err != nil {
		return fmt.Errorf("writing environments: %w", err)
	}
	vw := csv.NewWriter(events)
	if err := vw.Write([]string{"environment", "time", "kind"}); err != nil {
		return fmt.Errorf("writing events: %w", err)
	}
	for _, e := range tr.Events {
		kind := "person"
		if e.Robot {
			kind = "robot"
		}
		if err := vw.Write([]string{e.Env, e.Time.UTC().Format(time.RFC3339), kind}); err != nil {
			return fmt.Errorf("writing events: %w", err)
		}
	}
	vw.Flush()
	if err := vw.Error(); err != nil {
		return fmt.Errorf("writing events: %w", err)
	}
	return nil
}

// rng returns the random source of one part of the world: the same seed and
// part give the same numbers.
func rng(seed uint64, part string, n int) *rand.Rand {
	h := uint64(14695981039346656037) // FNV-1a over the part's name and number
	for _, c := range []byte(part + "/" + strconv.Itoa(n)) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(seed, h))
}

// normal draws from N(mean, sd) clamped to [lo, hi].
func normal(r *rand.Rand, mean, sd, lo, hi float64) float64 {
	return min(max(mean+sd*r.NormFloat64(), lo), hi)
}

// poisson draws a Poisson count with mean m (Knuth's method: m is small).
func poisson(r *rand.Rand, m float64) int {
	n, p := 0, r.Float64()
	for limit := math.Exp(-m); p > limit; p *= r.Float64() {
		n++
	}
	return n
}
