package devhours

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Shares of the environments by kind; previews are the rest.
const (
	stagingShare = 0.12
	qaShare      = 0.20
)

var teamNames = []string{"payments", "search", "identity", "catalog", "checkout", "billing", "growth", "mobile-api", "platform", "data", "notifications", "partners", "support", "ledger", "media", "maps"}

// env is one environment being generated.
type env struct {
	Env
	persons, robots []time.Time
}

type team struct {
	name    string
	zone    string
	members []*person
}

// world is everyone and everything of one trace.
type world struct {
	seed     uint64
	from, to time.Time
	dates    []time.Time // every local date of the trace, a week before it included
	weekdays []string
	people   int
	envs     []*env
}

func newWorld(cfg Config) *world {
	w := &world{seed: cfg.Seed, from: start, to: start.AddDate(0, 0, 7*cfg.Weeks)}
	for d := w.from.AddDate(0, 0, -7); d.Before(w.to.AddDate(0, 0, 1)); d = d.AddDate(0, 0, 1) {
		w.dates = append(w.dates, d)
		if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday {
			w.weekdays = append(w.weekdays, d.Format(time.DateOnly))
		}
	}
	r := rng(cfg.Seed, "world", 0)
	staging := max(1, int(math.Round(stagingShare*float64(cfg.Envs))))
	qa := max(1, int(math.Round(qaShare*float64(cfg.Envs))))
	previews := max(0, cfg.Envs-staging-qa)
	teams := make([]*team, max(1, (2*staging+2)/3))
	for i := range teams {
		teams[i] = w.newTeam(r, i)
	}
	for i := range staging {
		w.staging(teams[i%len(teams)], i, i/len(teams))
	}
	qaPeople := make([]*person, max(1, qa/5))
	for i := range qaPeople {
		qaPeople[i] = w.newPerson([]string{"Europe/Berlin", "Asia/Kolkata", "America/New_York"}[r.IntN(3)])
	}
	for i := range qa {
		w.qa(qaPeople[r.IntN(len(qaPeople))], i)
	}
	firstPR := 1000 + r.IntN(8000)
	for i := range previews {
		w.preview(teams[r.IntN(len(teams))], firstPR+i)
	}
	return w
}

func (w *world) newPerson(zone string) *person {
	w.people++
	return newPerson(w.seed, w.people, zone, w.weekdays)
}

func pickZone(r *rand.Rand) string {
	total := 0
	for _, z := range zones {
		total += z.weight
	}
	n := r.IntN(total)
	for _, z := range zones {
		if n -= z.weight; n < 0 {
			return z.name
		}
	}
	return zones[0].name
}

// newTeam is three to nine people in one zone; one in five members works
// from another zone.
func (w *world) newTeam(r *rand.Rand, i int) *team {
	t := &team{name: teamNames[i%len(teamNames)], zone: pickZone(r)}
	if i >= len(teamNames) {
		t.name = fmt.Sprintf("%s-%d", t.name, i/len(teamNames)+1)
	}
	for range 3 + r.IntN(7) {
		zone := t.zone
		if r.Float64() < 0.2 {
			zone = pickZone(r)
		}
		t.members = append(t.members, w.newPerson(zone))
	}
	return t
}

func (w *world) add(e *env) { w.envs = append(w.envs, e) }

func newEnv(name, zone string, r *rand.Rand, resumeMedian float64) *env {
	return &env{Env: Env{
		Name: name, Zone: zone, IdleAfter: 30 * time.Minute, WakeMode: "Request", AutoResume: true, PauseEarly: true,
		ResumeSeconds: int(math.Round(min(max(resumeMedian*math.Exp(0.5*r.NormFloat64()), 10), 300))),
	}}
}

// localDates calls f with every local date of the trace in p's zone.
func (w *world) localDates(p *person, f func(date time.Time)) {
	for _, d := range w.dates {
		y, m, day := d.Date()
		f(time.Date(y, m, day, 12, 0, 0, 0, p.loc))
	}
}

// staging is a team's shared environment: each member has their own habit
// of using it on a workday, a few sittings when they do; now and then
// someone checks it in the evening. Robots: CI smoke tests after each deploy
// and, on some, an uptime monitor every ten minutes.
func (w *world) staging(t *team, i, nth int) {
	r := rng(w.seed, "staging", i)
	name := "staging-" + t.name
	if nth > 0 { // the team's second staging environment
		name = fmt.Sprintf("%s-%d", name, nth+1)
	}
	e := newEnv(name, t.zone, r, 60)
	for _, m := range t.members {
		habit := 0.2 + 0.6*r.Float64()
		w.localDates(m, func(date time.Time) {
			spans := m.day(date)
			if len(spans) == 0 || r.Float64() > habit {
				return
			}
			for range 1 + poisson(r, 1.5) {
				if at, end, ok := pick(r, spans); ok {
					e.persons = session(r, e.persons, at, end, sessionLength(r, 15*time.Minute))
				}
			}
		})
	}
	lead := t.members[0]
	w.localDates(lead, func(date time.Time) {
		if r.Float64() < 0.06 {
			from := time.Date(date.Year(), date.Month(), date.Day(), 19, 0, 0, 0, lead.loc).Add(time.Duration(r.Int64N(int64(4 * time.Hour))))
			e.persons = session(r, e.persons, from, from.Add(time.Hour), sessionLength(r, 8*time.Minute))
		}
		if len(lead.day(date)) > 0 && date.Weekday() != time.Saturday && date.Weekday() != time.Sunday {
			for range poisson(r, 3) {
				if at, _, ok := pick(r, lead.day(date)); ok {
					e.robots = burst(r, e.robots, at, 5, time.Minute)
				}
			}
		}
	})
	if r.Float64() < 0.3 {
		for at := w.from.Add(time.Duration(r.Int64N(int64(10 * time.Minute)))); at.Before(w.to); at = at.Add(10 * time.Minute) {
			e.robots = append(e.robots, at.Truncate(time.Second))
		}
	}
	w.add(e)
}

// preview is a pull request's environment: its author tries it the day it is
// opened and on most of the days they work on it, one or two reviewers look
// at it in the first days, and after a few working days (a few weeks for one
// in ten) nobody comes back, but for the odd old link once. Robots: a chat
// link unfurler when it opens, crawlers at any hour for as long as it exists.
func (w *world) preview(t *team, number int) {
	r := rng(w.seed, "preview", number)
	author := t.members[r.IntN(len(t.members))]
	e := newEnv(fmt.Sprintf("pr-%d", number), t.zone, r, 40)
	var reviewers []*person
	for range 1 + r.IntN(2) {
		if m := t.members[r.IntN(len(t.members))]; m != author {
			reviewers = append(reviewers, m)
		}
	}
	life := int(math.Round(min(max(3*math.Exp(0.7*r.NormFloat64()), 1), 15)))
	if r.Float64() < 0.1 {
		life = 10 + r.IntN(16)
	}
	opened := w.dates[r.IntN(len(w.dates)-1)]
	day, created := 0, time.Time{}
	w.localDates(author, func(date time.Time) {
		spans := author.day(date)
		if date.Before(opened) || day >= life || len(spans) == 0 {
			return
		}
		if day == 0 {
			at, _, _ := pick(r, spans)
			created = at
			e.robots = burst(r, e.robots, at, 1+r.IntN(3), 30*time.Second)
			spans = cut(spans, spans[0].from, at)
		}
		if day == 0 || r.Float64() < 0.75 {
			for range 1 + poisson(r, 1) + boolInt(day == 0) {
				if at, end, ok := pick(r, spans); ok {
					e.persons = session(r, e.persons, at, end, sessionLength(r, 10*time.Minute))
				}
			}
		}
		day++
	})
	if created.IsZero() {
		w.add(e) // opened too late to be seen: robots only
		return
	}
	for _, rv := range reviewers {
		w.localDates(rv, func(date time.Time) {
			if date.Before(created) || date.After(created.AddDate(0, 0, 3)) || r.Float64() > 0.5 {
				return
			}
			if at, end, ok := pick(r, cut(rv.day(date), time.Time{}, created)); ok {
				e.persons = session(r, e.persons, at, end, sessionLength(r, 8*time.Minute))
			}
		})
	}
	if r.Float64() < 0.1 { // someone opens an old link, weeks later
		later := created.AddDate(0, 0, 7*(1+r.IntN(4)))
		if at, end, ok := pick(r, author.day(later)); ok {
			e.persons = session(r, e.persons, at, end, 3*time.Minute)
		}
	}
	for at := created; at.Before(w.to); at = at.Add(time.Duration(r.ExpFloat64() * float64(48*time.Hour))) {
		e.robots = append(e.robots, at.Add(time.Minute).Truncate(time.Second))
	}
	w.add(e)
}

// qa is a QA engineer's environment: tested on a day or two of most weeks,
// in long sittings; some lie unused for weeks; a third ask before waking.
// Robots: on some, a nightly end-to-end run at 02:00 local.
func (w *world) qa(p *person, i int) {
	r := rng(w.seed, "qa", i)
	e := newEnv(fmt.Sprintf("qa-%d", i+1), p.loc.String(), r, 90)
	if r.Float64() < 0.3 {
		e.WakeMode = "Ask"
	}
	var dormantFrom, dormantTo time.Time
	if r.Float64() < 0.3 {
		dormantFrom = w.from.AddDate(0, 0, r.IntN(7*6))
		dormantTo = dormantFrom.AddDate(0, 0, 7*(1+r.IntN(3)))
	}
	perWeek := 0.5 + 2*r.Float64()
	nightly := r.Float64() < 0.3
	w.localDates(p, func(date time.Time) {
		if nightly {
			at := time.Date(date.Year(), date.Month(), date.Day(), 2, 0, 0, 0, p.loc)
			e.robots = burst(r, e.robots, at, 20, 10*time.Minute)
		}
		spans := p.day(date)
		if len(spans) == 0 || (!date.Before(dormantFrom) && date.Before(dormantTo)) || r.Float64() > perWeek/5 {
			return
		}
		for range 1 + poisson(r, 0.7) {
			if at, end, ok := pick(r, spans); ok {
				e.persons = session(r, e.persons, at, end, sessionLength(r, 40*time.Minute))
			}
		}
	})
	w.add(e)
}

// burst appends n robot requests spread over d from t.
func burst(r *rand.Rand, out []time.Time, t time.Time, n int, d time.Duration) []time.Time {
	for range n {
		out = append(out, t.Add(time.Duration(r.Int64N(int64(d)))).Truncate(time.Second))
	}
	return out
}
