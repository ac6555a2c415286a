package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"time"
)

// Result is one policy's figures: the total and each environment's.
type Result struct {
	Total        Counts            `json:"total"`
	Environments map[string]Counts `json:"environments"`
}

// Report is the simulator's output, keyed by policy name.
type Report map[string]*Result

// week1 is the Monday 00:00 UTC on or before t.
func week1(t time.Time) time.Time {
	d := t.UTC().Truncate(24 * time.Hour)
	return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
}

// scoreStart is the first instant scored when scoring from week n (1-based).
func scoreStart(tr *Trace, n int) (time.Time, error) {
	if n < 1 {
		return time.Time{}, fmt.Errorf("SCORE_FROM_WEEK=%d: weeks count from 1", n)
	}
	return week1(tr.First).AddDate(0, 0, 7*(n-1)), nil
}

// Replay runs every policy over every environment of tr, scoring from week
// scoreWeek on, and returns the report and the forecast policy's wakes. The
// environments are independent, so they are replayed in parallel.
func Replay(tr *Trace, scoreWeek int) (Report, []Wake, error) {
	from, err := scoreStart(tr, scoreWeek)
	if err != nil {
		return nil, nil, err
	}
	start, end := tr.First, tr.Last.Add(time.Hour)
	type job struct{ env, policy int }
	counts := make([][]Counts, len(tr.Envs))
	wakes := make([][]Wake, len(tr.Envs))
	for i := range counts {
		counts[i] = make([]Counts, len(Policies))
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for j := range jobs {
				c, w := simulate(tr.Envs[j.env], Policies[j.policy], start, end, from)
				counts[j.env][j.policy] = c
				if Policies[j.policy].Name == "forecast" {
					wakes[j.env] = w
				}
			}
		})
	}
	for e := range tr.Envs {
		for p := range Policies {
			jobs <- job{e, p}
		}
	}
	close(jobs)
	wg.Wait()
	rep := Report{}
	for p, pol := range Policies {
		res := &Result{Environments: map[string]Counts{}}
		for e, env := range tr.Envs {
			c := counts[e][p]
			res.Total.Add(c)
			c.AwakeMinutes = round2(c.AwakeMinutes)
			res.Environments[env.Name] = c
		}
		res.Total.AwakeMinutes = round2(res.Total.AwakeMinutes)
		rep[pol.Name] = res
	}
	var all []Wake
	for _, w := range wakes {
		all = append(all, w...)
	}
	return rep, all, nil
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// writeWakes writes the forecast wakes as environment,time.
func writeWakes(w io.Writer, wakes []Wake) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"environment", "time"}); err != nil {
		return fmt.Errorf("writing wakes: %w", err)
	}
	for _, wk := range wakes {
		if err := cw.Write([]string{wk.Env, wk.Time.UTC().Format(time.RFC3339)}); err != nil {
			return fmt.Errorf("writing wakes: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing wakes: %w", err)
	}
	return nil
}
