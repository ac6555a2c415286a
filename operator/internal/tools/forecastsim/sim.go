package main

import (
	"time"

	"napwake.dev/operator/internal/forecast"
	"napwake.dev/operator/internal/schedule"
)

// Policy is one way of deciding when an environment is awake.
type Policy struct {
	Name string
	// Forecast: the forecast learns from person events and is asked.
	Forecast bool
	// Act: its answers are acted on (false: Observe, reported only).
	Act bool
	// PauseEarly: pauseEarly is on as well as autoResume.
	PauseEarly bool
	// Schedule: Mon–Fri 08:00–19:00 local, woken at the start, not paused
	// for idleness inside.
	Schedule bool
	// IdleAfter, when set, replaces every environment's idleAfter: the
	// sweep of fixed idleAfter the forecast is compared with
	// (docs/bench/forecast.md#method).
	IdleAfter time.Duration
}

// Policies are the policies compared, in the order they are reported.
var Policies = []Policy{
	{Name: "idle-only"},
	{Name: "schedule", Schedule: true},
	{Name: "forecast-observe", Forecast: true, PauseEarly: true},
	{Name: "forecast", Forecast: true, Act: true},
	{Name: "forecast+pauseEarly", Forecast: true, Act: true, PauseEarly: true},
	{Name: "idle-45m", IdleAfter: 45 * time.Minute},
	{Name: "idle-1h", IdleAfter: time.Hour},
	{Name: "idle-1h30m", IdleAfter: 90 * time.Minute},
	{Name: "idle-2h", IdleAfter: 2 * time.Hour},
	{Name: "idle-3h", IdleAfter: 3 * time.Hour},
	{Name: "idle-4h", IdleAfter: 4 * time.Hour},
}

// workday is the schedule policy's window.
const workday = "Mon-Fri 08:00-19:00"

// Counts are the figures of one environment (or a total) under one policy.
type Counts struct {
	ColdStartsPerson   int     `json:"cold_starts_person"`
	AwakeMinutes       float64 `json:"awake_minutes"`
	ForecastWakes      int     `json:"forecast_wakes"`
	ForecastWakesUsed  int     `json:"forecast_wakes_used"`
	StaleForecastWakes int     `json:"stale_forecast_wakes"`
	EarlyPauses        int     `json:"early_pauses"`
	EarlyPauseRegrets  int     `json:"early_pause_regrets"`
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.ColdStartsPerson += o.ColdStartsPerson
	c.AwakeMinutes += o.AwakeMinutes
	c.ForecastWakes += o.ForecastWakes
	c.ForecastWakesUsed += o.ForecastWakesUsed
	c.StaleForecastWakes += o.StaleForecastWakes
	c.EarlyPauses += o.EarlyPauses
	c.EarlyPauseRegrets += o.EarlyPauseRegrets
}

type phase int

const (
	paused phase = iota
	resuming
	running
)

// Wake is one forecast wake, for WAKES=.
type Wake struct {
	Env  string
	Time time.Time
}

// replay is one environment under one policy: the idle rules
// (docs/bench/forecast.md#method), and what the policy adds to them.
type replay struct {
	e         *Env
	p         Policy
	f         *forecast.Forecast
	sched     *schedule.Schedule
	scoreFrom time.Time
	c         Counts
	wakes     []Wake

	phase              phase
	wakeStart, readyAt time.Time
	// lastActivity is the latest person event or wake: the idle clock.
	lastActivity time.Time
	// pauseAt is when the idle rule next considers a pause (awake only).
	pauseAt time.Time
	// tick is the next whole minute the forecast is asked (zero: not until
	// something changes).
	tick time.Time
	// nextStart is the schedule's next window start (paused only).
	nextStart time.Time
	// lastPerson is the latest person event, for the 4-day staleness count.
	lastPerson time.Time

	// wakePending: the last forecast wake (scored) waits for a person before
	// the next pause; in Observe, until wouldUntil.
	wakePending bool
	wouldUntil  time.Time
	// earlyPending: the last early pause (scored) is a regret if a person
	// comes before regretBefore; in Observe, while it is awake.
	earlyPending bool
	regretBefore time.Time
}

// simulate replays one environment from start to end under p.
func simulate(e *Env, p Policy, start, end, scoreFrom time.Time) (Counts, []Wake) {
	c, w, _ := simulateState(e, p, start, end, scoreFrom)
	return c, w
}

// simulateState is simulate, with the forecast's state at the end (nil
// without a forecast).
func simulateState(e *Env, p Policy, start, end, scoreFrom time.Time) (Counts, []Wake, []byte) {
	if p.IdleAfter > 0 {
		fixed := *e
		fixed.IdleAfter = p.IdleAfter
		e = &fixed
	}
	r := &replay{e: e, p: p, scoreFrom: scoreFrom}
	if p.Forecast {
		r.f = forecast.New(e.Loc, start, forecast.Settings{IdleAfter: e.IdleAfter, PauseEarly: p.PauseEarly && e.PauseEarly && !e.Ask})
	}
	if p.Schedule {
		s, err := schedule.Parse([]string{workday}, e.Loc.String())
		if err != nil {
			panic(err) // a constant window in a zone already loaded
		}
		r.sched = s
	}
	r.paused(start)
	next := 0 // the next person event
	for {
		t := end
		if next < len(e.Persons) && e.Persons[next].Before(t) {
			t = e.Persons[next]
		}
		for _, c := range []time.Time{r.readyIfResuming(), r.pauseIfAwake(), r.tick, r.nextStart} {
			if !c.IsZero() && c.Before(t) {
				t = c
			}
		}
		if !t.Before(end) && (next >= len(e.Persons) || !e.Persons[next].Before(end)) {
			break
		}
		// At one instant: Ready, then pauses (an event at the pause's instant
		// finds it paused), then the forecast and the schedule, then events.
		if r.phase == resuming && !t.Before(r.readyAt) {
			r.ready(t)
		}
		if r.phase != paused && !t.Before(r.pauseAt) {
			r.idle(t)
		}
		if !r.tick.IsZero() && !t.Before(r.tick) {
			r.ask(t)
		}
		if r.phase == paused && !r.nextStart.IsZero() && !t.Before(r.nextStart) {
			r.wake(t)
		}
		for next < len(e.Persons) && !e.Persons[next].After(t) {
			r.person(e.Persons[next])
			next++
		}
	}
	if r.phase != paused {
		r.addAwake(end)
	}
	if r.f == nil {
		return r.c, r.wakes, nil
	}
	r.f.Advance(end)
	return r.c, r.wakes, r.f.Encode()
}

func (r *replay) readyIfResuming() time.Time {
	if r.phase == resuming {
		return r.readyAt
	}
	return time.Time{}
}

func (r *replay) pauseIfAwake() time.Time {
	if r.phase != paused {
		return r.pauseAt
	}
	return time.Time{}
}

func (r *replay) scored(t time.Time) bool { return !t.Before(r.scoreFrom) }

func (r *replay) autoResume() bool { return r.p.Forecast && r.e.AutoResume }

func (r *replay) pauseEarly() bool {
	return r.p.Forecast && r.p.PauseEarly && r.e.PauseEarly && !r.e.Ask
}

// person handles a person event at t.
func (r *replay) person(t time.Time) {
	if r.f != nil {
		r.f.RecordPerson(t)
	}
	r.lastPerson = t
	if r.phase != running && r.scored(t) {
		r.c.ColdStartsPerson++
	}
	if r.wakePending && (r.phase != paused || t.Before(r.wouldUntil)) {
		r.c.ForecastWakesUsed++
	}
	r.wakePending, r.wouldUntil = false, time.Time{}
	if r.earlyPending && (r.phase != paused || t.Before(r.regretBefore)) {
		r.c.EarlyPauseRegrets++
	}
	r.earlyPending = false
	if r.phase == paused {
		r.wake(t)
	}
	r.lastActivity = t
	r.pauseAt = maxTime(t.Add(r.e.IdleAfter), r.readyAt)
	r.askFrom(t)
}

// wake starts a wake at t (a person's, the schedule's or the forecast's).
func (r *replay) wake(t time.Time) {
	r.phase, r.wakeStart, r.readyAt = resuming, t, t.Add(r.e.Resume)
	r.lastActivity, r.nextStart = t, time.Time{}
	r.pauseAt = maxTime(t.Add(r.e.IdleAfter), r.readyAt)
	r.wouldUntil = time.Time{}
	r.askFrom(t)
}

func (r *replay) ready(t time.Time) {
	r.phase = running
	if r.f != nil {
		r.f.RecordResume(r.e.Resume)
	}
	r.askFrom(t)
}

// idle is the idle rule's moment: pause, unless the schedule or the
// forecast's hold keeps it awake.
func (r *replay) idle(t time.Time) {
	if r.sched != nil && r.sched.Awake(t) {
		r.pauseAt = r.sched.End(t)
		return
	}
	if r.autoResume() && r.p.Act {
		if d := r.f.Hold(t); d.Act {
			r.pauseAt = nextMinute(d.Until, t)
			return
		}
	}
	r.pause(t)
}

func (r *replay) pause(t time.Time) {
	r.addAwake(t)
	r.phase = paused
	r.wakePending = false
	r.paused(t)
}

// paused sets what a paused environment waits for.
func (r *replay) paused(t time.Time) {
	if r.sched != nil {
		r.nextStart = r.sched.NextStart(t)
	}
	r.askFrom(t)
}

func (r *replay) addAwake(t time.Time) {
	from := maxTime(r.wakeStart, r.scoreFrom)
	if t.After(from) {
		r.c.AwakeMinutes += t.Sub(from).Minutes()
	}
}

// askFrom has the forecast asked at the first whole minute from t, when the
// policy asks it anything in the current phase.
func (r *replay) askFrom(t time.Time) {
	r.tick = time.Time{}
	switch {
	case r.phase == paused && r.autoResume():
	case r.phase == running && r.pauseEarly():
	default:
		return
	}
	r.tick = ceilMinute(t)
}

// ask puts the forecast's question of the current phase at the tick t.
func (r *replay) ask(t time.Time) {
	var d forecast.Decision
	switch {
	case r.phase == paused && !r.wouldUntil.IsZero() && t.Before(r.wouldUntil):
		r.tick = r.wouldUntil // Observe: a would-be wake is awake until then
		return
	case r.phase == paused:
		r.wakePending, r.wouldUntil = false, time.Time{} // a would-be wake ends unused
		if d = r.f.PreWake(t); d.Act {
			r.forecastWake(t)
			return
		}
	case r.phase == running:
		if d = r.f.PauseEarly(t, r.lastActivity, r.e.Ask); d.Act {
			r.earlyPause(t)
			return
		}
	default:
		return
	}
	r.tick = nextMinute(d.Until, t)
	switch {
	case everyMinute:
		r.tick = t.Add(time.Minute)
	case d.Until.IsZero():
		r.tick = time.Time{}
	}
}

// everyMinute makes the replay ask the forecast at every minute instead of
// when its answer can next change: a test proves the two agree.
var everyMinute = false

func (r *replay) forecastWake(t time.Time) {
	if r.scored(t) {
		r.c.ForecastWakes++
		r.wakePending = true
		if r.lastPerson.IsZero() || t.Sub(r.lastPerson) >= forecast.StaleAfter {
			r.c.StaleForecastWakes++
		}
	}
	if !r.p.Act {
		// Observe: it would be awake until its idle pause.
		r.wouldUntil = maxTime(t.Add(r.e.IdleAfter), t.Add(r.e.Resume))
		r.tick = r.wouldUntil
		return
	}
	r.wakes = append(r.wakes, Wake{Env: r.e.Name, Time: t})
	r.wake(t)
}

func (r *replay) earlyPause(t time.Time) {
	scored := r.scored(t)
	if scored {
		r.c.EarlyPauses++
	}
	r.earlyPending, r.regretBefore = scored, r.pauseAt
	if !r.p.Act {
		r.tick = time.Time{} // Observe: once per idle stretch
		return
	}
	r.pause(t)
}

// ceilMinute is the first whole minute at or after t.
func ceilMinute(t time.Time) time.Time {
	if m := t.Truncate(time.Minute); !m.Equal(t) {
		return m.Add(time.Minute)
	}
	return t
}

// nextMinute is the first whole minute at or after until, and after t.
func nextMinute(until, t time.Time) time.Time {
	return maxTime(ceilMinute(until), ceilMinute(t.Add(time.Nanosecond)))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
