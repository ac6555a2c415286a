// Package kinds generates the trace kinds a forecast must survive
// (docs/bench/forecast.md#trace-kinds), in napwake-devhours-v1's format:
// office hours of teams in several zones across both DST changes, teams'
// holiday weeks, robots on half the environments, night shifts crossing
// the week's boundary, weekend-only environments, long gaps inside the
// day. Like devhours it is written as people behave, owns no knowledge of
// the forecast, and a seed gives the same trace on every machine (one PCG
// source per environment).
package kinds

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"napwake.dev/operator/internal/tools/forecastsim/devhours"
)

// Names are the kinds, in the order they are reported.
var Names = []string{"office", "holiday", "robots", "nightshift", "weekend", "longgaps"}

// start is the traces' first Monday, 2 March 2026: eight weeks cross the US
// (8 March) and EU (29 March) clocks going forward and Sydney's going back
// (5 April).
var start = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// zones are the teams' zones: both hemispheres' DST changes and none.
var zones = []string{"Europe/Berlin", "America/New_York", "Australia/Sydney", "Europe/London", "Asia/Kolkata"}

// shape is what a kind changes in a working day.
type shape struct {
	// night: the shift starts around 22:00 and runs past midnight, every
	// day of the week.
	night bool
	// weekend: only Saturdays and Sundays.
	weekend bool
	// holiday: each team takes one week off in weeks 3 to 8.
	holiday bool
	// robotsHalf: robots on every other environment.
	robotsHalf bool
	// longGaps: the day has one to three 1.5h-3.5h gaps.
	longGaps bool
}

func shapeOf(kind string) (shape, error) {
	switch kind {
	case "office":
		return shape{}, nil
	case "holiday":
		return shape{holiday: true}, nil
	case "robots":
		return shape{robotsHalf: true}, nil
	case "nightshift":
		return shape{night: true}, nil
	case "weekend":
		return shape{weekend: true}, nil
	case "longgaps":
		return shape{longGaps: true}, nil
	}
	return shape{}, fmt.Errorf("unknown trace kind %q: want one of %v", kind, Names)
}

// Generate makes a trace of kind with envs environments over weeks weeks.
// Environments are team stagings (used every working day), PR previews
// (used for a few days, then abandoned) and QA environments (a day or two
// a week); autoResume is off on every tenth, pauseEarly on every other,
// wake mode Ask on every seventh.
func Generate(kind string, seed uint64, envs, weeks int) (*devhours.Trace, error) {
	sh, err := shapeOf(kind)
	if err != nil {
		return nil, err
	}
	tr := &devhours.Trace{}
	end := start.AddDate(0, 0, 7*weeks)
	for i := range envs {
		r := rand.New(rand.NewPCG(seed, uint64(i)+1))
		zone := zones[i%len(zones)]
		loc, err := time.LoadLocation(zone)
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", zone, err)
		}
		role := [...]string{"staging", "staging", "preview", "qa"}[i%4]
		e := devhours.Env{
			Name: role + "-" + strconv.Itoa(i), Zone: zone, ResumeSeconds: 20 + r.IntN(70), IdleAfter: 30 * time.Minute,
			WakeMode: "Request", AutoResume: i%10 != 9, PauseEarly: i%2 == 0,
		}
		if i%7 == 6 {
			e.WakeMode = "Ask"
		}
		tr.Envs = append(tr.Envs, e)
		g := &env{r: r, loc: loc, sh: sh, role: role, people: 1 + r.IntN(4), end: end, holidayWeek: 2 + r.IntN(weeks-2)}
		for _, t := range g.persons(weeks) {
			tr.Events = append(tr.Events, devhours.Event{Env: e.Name, Time: t})
		}
		if !sh.robotsHalf || i%2 == 0 {
			for _, t := range robots(r, end) {
				tr.Events = append(tr.Events, devhours.Event{Env: e.Name, Time: t, Robot: true})
			}
		}
	}
	slices.SortFunc(tr.Events, func(a, b devhours.Event) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Env, b.Env), cmp.Compare(boolInt(a.Robot), boolInt(b.Robot)))
	})
	return tr, nil
}

// env is one environment's generator.
type env struct {
	r           *rand.Rand
	loc         *time.Location
	sh          shape
	role        string
	people      int
	end         time.Time
	holidayWeek int
}

// persons returns the environment's person events, to the second.
func (g *env) persons(weeks int) []time.Time {
	var out []time.Time
	// A preview lives 2 to 9 days from a random day, then is abandoned.
	pFrom := g.r.IntN(7 * weeks)
	pTo := pFrom + 2 + g.r.IntN(8)
	// Each person's usual start, minutes from midnight.
	usual := make([]float64, g.people)
	for p := range usual {
		usual[p] = g.normal(8.75*60, 30, 7*60, 10.5*60)
		if g.sh.night {
			usual[p] = g.normal(22*60, 20, 21*60, 23*60)
		}
	}
	for d := range 7 * weeks {
		date := start.AddDate(0, 0, d)
		wd := date.Weekday()
		weekendDay := wd == time.Saturday || wd == time.Sunday
		switch {
		case g.sh.weekend != weekendDay && !g.sh.night:
			continue
		case g.sh.holiday && d/7 == g.holidayWeek:
			continue
		case g.role == "preview" && (d < pFrom || d > pTo):
			continue
		case g.role == "qa" && g.r.Float64() > 0.3:
			continue
		}
		for p := range g.people {
			if g.r.Float64() < 0.08 { // a day off
				continue
			}
			out = append(out, g.day(date, usual[p])...)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// day is one person's day from their usual start: work blocks with
// events every one to six minutes, and breaks between them: short ones, a
// meeting, lunch, and with longGaps one to three long ones.
func (g *env) day(date time.Time, usual float64) []time.Time {
	y, m, d := date.Date()
	minute := usual + g.r.NormFloat64()*12
	length := g.normal(8.5*60, 45, 6*60, 10*60)
	if g.role == "qa" {
		length = g.normal(2*60, 40, 30, 4*60)
	}
	stop := minute + length
	long := 0
	if g.sh.longGaps {
		long = 1 + g.r.IntN(3)
	}
	lunch := false
	var out []time.Time
	for minute < stop {
		block := g.normal(70, 35, 10, 180)
		for t := minute; t < min(minute+block, stop); t += 1 + g.r.Float64()*5 {
			out = append(out, time.Date(y, m, d, 0, 0, int(t*60), 0, g.loc))
		}
		minute += block
		switch p := g.r.Float64(); {
		case long > 0 && p < 0.35:
			long--
			minute += g.normal(150, 35, 90, 210)
		case !lunch && !g.sh.night && minute > 11.75*60:
			lunch = true
			minute += g.normal(55, 12, 30, 90)
		case p < 0.55:
			minute += g.normal(10, 6, 2, 25)
		default:
			minute += g.normal(50, 20, 25, 110)
		}
	}
	return out
}

func (g *env) normal(mean, sd, lo, hi float64) float64 {
	return min(max(mean+sd*g.r.NormFloat64(), lo), hi)
}

// robots are an uptime check every five minutes and a CI run now and then.
func robots(r *rand.Rand, end time.Time) []time.Time {
	var out []time.Time
	for t := start.Add(time.Duration(r.IntN(300)) * time.Second); t.Before(end); t = t.Add(5 * time.Minute) {
		out = append(out, t)
		if r.Float64() < 0.01 {
			out = append(out, t.Add(time.Duration(r.IntN(300))*time.Second))
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
