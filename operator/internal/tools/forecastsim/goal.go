package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"napwake.dev/operator/internal/tools/forecastsim/devhours"
)

// The goal (docs/bench/forecast.md#method), against idle-only with the
// default 30-minute idleAfter, scored on weeks 5 to 8.
const (
	goalScoreWeek      = 5
	goalColdStartCut   = 0.60 // at least
	goalMoreAwake      = 0.20 // at most
	goalMinutesPerCold = 35   // extra awake minutes per avoided cold start, at most
	goalPrecision      = 0.70 // forecast wakes used, at least
	goalEarlySaved     = 60   // awake minutes pauseEarly saves per extra cold start, at least
)

// Goal is the figures the goal (docs/bench/forecast.md#method) is judged on,
// for one run (or a sum of runs).
type Goal struct {
	IdleOnly, Schedule, Forecast, PauseEarly Counts
}

// Add sums another run into g.
func (g *Goal) Add(o Goal) {
	g.IdleOnly.Add(o.IdleOnly)
	g.Schedule.Add(o.Schedule)
	g.Forecast.Add(o.Forecast)
	g.PauseEarly.Add(o.PauseEarly)
}

func goalOf(rep Report) Goal {
	return Goal{rep["idle-only"].Total, rep["schedule"].Total, rep["forecast"].Total, rep["forecast+pauseEarly"].Total}
}

// Cut is the share of idle-only's cold starts a policy avoids.
func cut(base, c Counts) float64 {
	return 1 - float64(c.ColdStartsPerson)/float64(base.ColdStartsPerson)
}

// moreAwake is how much more awake time a policy costs than base.
func moreAwake(base, c Counts) float64 { return c.AwakeMinutes/base.AwakeMinutes - 1 }

// perAvoided is the extra awake minutes paid per cold start avoided.
func perAvoided(base, c Counts) float64 {
	return (c.AwakeMinutes - base.AwakeMinutes) / float64(base.ColdStartsPerson-c.ColdStartsPerson)
}

// Precision is the share of forecast wakes a person used.
func (g Goal) Precision() float64 {
	return float64(g.Forecast.ForecastWakesUsed) / float64(g.Forecast.ForecastWakes)
}

// EarlySaved is the awake minutes pauseEarly saves per extra cold start it
// causes (+Inf when it causes none).
func (g Goal) EarlySaved() float64 {
	saved := g.Forecast.AwakeMinutes - g.PauseEarly.AwakeMinutes
	extra := g.PauseEarly.ColdStartsPerson - g.Forecast.ColdStartsPerson
	if extra <= 0 {
		return math.Inf(1)
	}
	return saved / float64(extra)
}

// Miss is a goal not met: which (cut, awake, price, precision, stale,
// pauseEarly) and by how much.
type Miss struct {
	Goal, Text string
}

// Misses lists the goals not met, empty when all are.
func (g Goal) Misses() []Miss {
	var out []Miss
	check := func(goal string, ok bool, format string, args ...any) {
		if !ok {
			out = append(out, Miss{goal, fmt.Sprintf(format, args...)})
		}
	}
	b, f := g.IdleOnly, g.Forecast
	check("cut", cut(b, f) >= goalColdStartCut, "cold starts cut %.1f %%, want at least 60 %%", 100*cut(b, f))
	check("awake", moreAwake(b, f) <= goalMoreAwake, "awake time %+.1f %%, want at most +20 %%", 100*moreAwake(b, f))
	check("price", perAvoided(b, f) <= goalMinutesPerCold, "%.1f extra awake minutes per avoided cold start, want at most 35", perAvoided(b, f))
	check("precision", g.Precision() >= goalPrecision, "forecast-wake precision %.1f %%, want at least 70 %%", 100*g.Precision())
	check("stale", f.StaleForecastWakes == 0, "%d forecast wakes of environments untouched for 4 days, want 0", f.StaleForecastWakes)
	check("pauseEarly", g.EarlySaved() >= goalEarlySaved, "pauseEarly saves %.1f awake minutes per extra cold start, want at least 60", g.EarlySaved())
	return out
}

// goalRun generates one seed's benchmark trace and replays it.
func goalRun(seed uint64) (Goal, error) {
	tr := fromDevhours(devhours.Generate(devhours.Default(seed)))
	rep, _, err := Replay(tr, goalScoreWeek)
	if err != nil {
		return Goal{}, err
	}
	return goalOf(rep), nil
}

// runGoal prints the goal table (docs/bench/forecast.md#results) for seeds
// (1-5 by default) in Markdown, and fails when a goal is missed.
func runGoal(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("forecastsim goal", flag.ContinueOnError)
	seeds := fs.String("seeds", "1-5", "seeds, as a range")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	lo, hi, err := seedRange(*seeds)
	if err != nil {
		return err
	}
	began := time.Now()
	fmt.Fprintln(out, "| seed | idle-only cold starts | awake min | forecast cold starts | awake min | cut | more awake | min per avoided | wakes | used | precision | stale | +pauseEarly cold starts | awake min | early pauses | regrets | min saved per extra cold start | schedule cold starts | awake min |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	var total Goal
	for s := lo; s <= hi; s++ {
		g, err := goalRun(s)
		if err != nil {
			return err
		}
		total.Add(g)
		fmt.Fprintln(out, goalLine(strconv.FormatUint(s, 10), g))
	}
	fmt.Fprintln(out, goalLine("total", total))
	fmt.Fprintf(out, "\n%d seeds in %.1f s\n", hi-lo+1, time.Since(began).Seconds())
	if m := total.Misses(); len(m) > 0 {
		texts := make([]string, len(m))
		for i, x := range m {
			texts[i] = x.Text
		}
		return fmt.Errorf("goal missed: %s", strings.Join(texts, "; "))
	}
	fmt.Fprintln(out, "every goal met")
	return nil
}

func goalLine(name string, g Goal) string {
	b, f, p, s := g.IdleOnly, g.Forecast, g.PauseEarly, g.Schedule
	return fmt.Sprintf("| %s | %d | %.0f | %d | %.0f | %.1f %% | %+.1f %% | %.1f | %d | %d | %.1f %% | %d | %d | %.0f | %d | %d | %.1f | %d | %.0f |",
		name, b.ColdStartsPerson, b.AwakeMinutes, f.ColdStartsPerson, f.AwakeMinutes, 100*cut(b, f), 100*moreAwake(b, f), perAvoided(b, f),
		f.ForecastWakes, f.ForecastWakesUsed, 100*g.Precision(), f.StaleForecastWakes,
		p.ColdStartsPerson, p.AwakeMinutes, p.EarlyPauses, p.EarlyPauseRegrets, g.EarlySaved(), s.ColdStartsPerson, s.AwakeMinutes)
}

func seedRange(s string) (lo, hi uint64, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = strconv.ParseUint(a, 10, 64); err == nil {
		hi = lo
		if isRange {
			hi, err = strconv.ParseUint(b, 10, 64)
		}
	}
	if err != nil || hi < lo {
		return 0, 0, fmt.Errorf("seeds %q: want N or N-M", s)
	}
	return lo, hi, nil
}
