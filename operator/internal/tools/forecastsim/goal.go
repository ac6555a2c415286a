package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"napwake.dev/operator/internal/tools/forecastsim/devhours"
	"napwake.dev/operator/internal/tools/forecastsim/kinds"
)

// The goals (docs/bench/forecast.md#method), against idle-only with each
// environment's idleAfter (30m), scored on weeks 5 to 8 of 8.
const (
	goalScoreWeek      = 5
	goalColdStartCut   = 0.63 // G1: at least
	goalMoreAwake      = 0.20 // G1: at most
	goalMinutesPerCold = 30   // G1: extra awake minutes per avoided cold start, at most
	goalPrecision      = 0.80 // G1: forecast wakes used, at least
	goalVsIdleAfter    = 1.15 // G2: the cut over a longer idleAfter's at the same awake increase, at least
	goalEarlySaved     = 60   // G4: awake minutes pauseEarly saves per extra cold start, at least
	// goalEnvs is the size of a generated kind's trace.
	goalEnvs  = 100
	goalWeeks = 8
)

// officeKind is the kind G1 is judged on.
const officeKind = "office"

// devhoursKind names napwake-devhours-v1 among the kinds.
const devhoursKind = "devhours"

// Goal is the figures the goals are judged on, for one run (or a sum of
// runs).
type Goal struct {
	IdleOnly, Schedule, Forecast, PauseEarly Counts
	// Sweep are the fixed longer idleAfter policies, in Policies' order.
	Sweep []Counts
	// Guards are the G3 guards broken (empty: none).
	Guards []string
}

// Add sums another run into g.
func (g *Goal) Add(o Goal) {
	g.IdleOnly.Add(o.IdleOnly)
	g.Schedule.Add(o.Schedule)
	g.Forecast.Add(o.Forecast)
	g.PauseEarly.Add(o.PauseEarly)
	if g.Sweep == nil {
		g.Sweep = make([]Counts, len(o.Sweep))
	}
	for i := range o.Sweep {
		g.Sweep[i].Add(o.Sweep[i])
	}
	g.Guards = append(g.Guards, o.Guards...)
}

func goalOf(rep Report) Goal {
	g := Goal{IdleOnly: rep["idle-only"].Total, Schedule: rep["schedule"].Total, Forecast: rep["forecast"].Total, PauseEarly: rep["forecast+pauseEarly"].Total}
	for _, p := range Policies {
		if p.IdleAfter > 0 {
			g.Sweep = append(g.Sweep, rep[p.Name].Total)
		}
	}
	return g
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

// Precision is the share of forecast wakes a person used (1 with none).
func (g Goal) Precision() float64 {
	if g.Forecast.ForecastWakes == 0 {
		return 1
	}
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

// SweepCut is the cut a fixed longer idleAfter gets at the forecast's
// awake increase, interpolated linearly along the sweep (idle-only is its
// first point, no increase and no cut); NaN past the sweep's longest.
func (g Goal) SweepCut() float64 {
	a := moreAwake(g.IdleOnly, g.Forecast)
	prevA, prevC := 0.0, 0.0
	for _, s := range g.Sweep {
		sa, sc := moreAwake(g.IdleOnly, s), cut(g.IdleOnly, s)
		if a <= sa {
			if sa == prevA {
				return sc
			}
			return prevC + (sc-prevC)*(a-prevA)/(sa-prevA)
		}
		prevA, prevC = sa, sc
	}
	return math.NaN()
}

// VsIdleAfter is G2's ratio: the forecast's cut over SweepCut.
func (g Goal) VsIdleAfter() float64 {
	if a := moreAwake(g.IdleOnly, g.Forecast); a <= 0 {
		return math.Inf(1) // no more awake time: any cut beats an idleAfter's none
	}
	return cut(g.IdleOnly, g.Forecast) / g.SweepCut()
}

// Miss is a goal not met: which (cut, awake, price, precision, stale,
// vsIdleAfter, guards, pauseEarly) and by how much.
type Miss struct {
	Goal, Text string
}

// Misses lists the goals not met, empty when all are; G1's only when
// office is set.
func (g Goal) Misses(office bool) []Miss {
	var out []Miss
	check := func(goal string, ok bool, format string, args ...any) {
		if !ok {
			out = append(out, Miss{goal, fmt.Sprintf(format, args...)})
		}
	}
	b, f := g.IdleOnly, g.Forecast
	if office {
		check("cut", cut(b, f) >= goalColdStartCut, "G1: cold starts cut %.1f %%, want at least 63 %%", 100*cut(b, f))
		check("awake", moreAwake(b, f) <= goalMoreAwake, "G1: awake time %+.1f %%, want at most +20 %%", 100*moreAwake(b, f))
		check("price", perAvoided(b, f) <= goalMinutesPerCold, "G1: %.1f extra awake minutes per avoided cold start, want at most 30", perAvoided(b, f))
		check("precision", g.Precision() >= goalPrecision, "G1: forecast-wake precision %.1f %%, want at least 80 %%", 100*g.Precision())
	}
	check("stale", f.StaleForecastWakes == 0, "G1: %d forecast wakes of environments untouched for 4 days, want 0", f.StaleForecastWakes)
	check("vsIdleAfter", g.VsIdleAfter() >= goalVsIdleAfter, "G2: %.2f× the cut of a longer idleAfter at the same awake time, want at least 1.15×", g.VsIdleAfter())
	check("guards", len(g.Guards) == 0, "G3: %s", strings.Join(g.Guards, "; "))
	check("pauseEarly", g.EarlySaved() >= goalEarlySaved, "G4: pauseEarly saves %.1f awake minutes per extra cold start, want at least 60", g.EarlySaved())
	return out
}

// goalTrace generates one kind's trace of seed.
func goalTrace(kind string, seed uint64) (*Trace, error) {
	if kind == devhoursKind {
		return fromDevhours(devhours.Generate(devhours.Default(seed))), nil
	}
	g, err := kinds.Generate(kind, seed, goalEnvs, goalWeeks)
	if err != nil {
		return nil, err
	}
	return fromDevhours(g), nil
}

// goalRun generates one kind's trace of seed and replays it, with and
// without its robots (G3).
func goalRun(kind string, seed uint64) (Goal, error) {
	tr, err := goalTrace(kind, seed)
	if err != nil {
		return Goal{}, err
	}
	rep, wakes, err := Replay(tr, goalScoreWeek)
	if err != nil {
		return Goal{}, err
	}
	g := goalOf(rep)
	bare, bareWakes, err := Replay(withoutRobots(tr), goalScoreWeek)
	if err != nil {
		return Goal{}, err
	}
	if !reflect.DeepEqual(rep, bare) || !reflect.DeepEqual(wakes, bareWakes) {
		g.Guards = append(g.Guards, "robot rows change the results or the wakes")
	}
	g.Guards = append(g.Guards, guards(tr, rep)...)
	return g, nil
}

// guards lists the environments where the forecast acted against its
// switches: a wake or a hold with autoResume off (its awake time differs
// from idle-only's), an early pause with pauseEarly off or wake mode Ask.
func guards(tr *Trace, rep Report) []string {
	var out []string
	for _, e := range tr.Envs {
		idle, fc, pe := rep["idle-only"].Environments[e.Name], rep["forecast"].Environments[e.Name], rep["forecast+pauseEarly"].Environments[e.Name]
		if !e.AutoResume && (fc != idle || pe.ForecastWakes != 0) {
			out = append(out, e.Name+": a forecast wake or hold with autoResume off")
		}
		if (!e.PauseEarly || e.Ask) && pe.EarlyPauses != 0 {
			out = append(out, e.Name+": an early pause with pauseEarly off or wake mode Ask")
		}
	}
	return out
}

// withoutRobots is tr with no robot rows.
func withoutRobots(tr *Trace) *Trace {
	out := *tr
	out.Envs = nil
	for _, e := range tr.Envs {
		c := *e
		c.Robots = 0
		out.Envs = append(out.Envs, &c)
	}
	return &out
}

// runGoal prints the goal table (docs/bench/forecast.md#results) for kinds
// and seeds in Markdown, and fails when a goal is missed.
func runGoal(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("forecastsim goal", flag.ContinueOnError)
	seeds := fs.String("seeds", "1-3", "seeds, as a range")
	kindList := fs.String("kinds", strings.Join(append(append([]string{}, kinds.Names...), devhoursKind), ","), "trace kinds, comma-separated")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	lo, hi, err := seedRange(*seeds)
	if err != nil {
		return err
	}
	began := time.Now()
	fmt.Fprintln(out, "| kind | seed | idle-only cold starts | awake min | forecast cold starts | awake min | cut | more awake | min per avoided | wakes | used | precision | stale | longer idleAfter's cut at that awake | G2 ratio | G3 | +pauseEarly cold starts | awake min | early pauses | regrets | min saved per extra cold start |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	var misses []string
	for _, kind := range strings.Split(*kindList, ",") {
		var total Goal
		for s := lo; s <= hi; s++ {
			g, err := goalRun(kind, s)
			if err != nil {
				return err
			}
			total.Add(g)
			fmt.Fprintln(out, goalLine(kind, strconv.FormatUint(s, 10), g))
			for _, m := range g.Misses(kind == officeKind) {
				misses = append(misses, fmt.Sprintf("%s seed %d: %s", kind, s, m.Text))
			}
		}
		fmt.Fprintln(out, goalLine(kind, "total", total))
	}
	fmt.Fprintf(out, "\n%d seeds of %s in %.1f s\n", hi-lo+1, *kindList, time.Since(began).Seconds())
	if len(misses) > 0 {
		fmt.Fprintln(out, "\nMissed:\n- "+strings.Join(misses, "\n- "))
		return fmt.Errorf("%d goals missed", len(misses))
	}
	fmt.Fprintln(out, "every goal met")
	return nil
}

func goalLine(kind, name string, g Goal) string {
	b, f, p := g.IdleOnly, g.Forecast, g.PauseEarly
	g3 := "ok"
	if len(g.Guards) > 0 {
		g3 = strconv.Itoa(len(g.Guards)) + " broken"
	}
	return fmt.Sprintf("| %s | %s | %d | %.0f | %d | %.0f | %.1f %% | %+.1f %% | %.1f | %d | %d | %.1f %% | %d | %.1f %% | %.2f | %s | %d | %.0f | %d | %d | %.1f |",
		kind, name, b.ColdStartsPerson, b.AwakeMinutes, f.ColdStartsPerson, f.AwakeMinutes, 100*cut(b, f), 100*moreAwake(b, f), perAvoided(b, f),
		f.ForecastWakes, f.ForecastWakesUsed, 100*g.Precision(), f.StaleForecastWakes, 100*g.SweepCut(), g.VsIdleAfter(), g3,
		p.ColdStartsPerson, p.AwakeMinutes, p.EarlyPauses, p.EarlyPauseRegrets, g.EarlySaved())
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
