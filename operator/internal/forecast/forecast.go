package forecast

import (
	"math"
	"time"

	"napwake.dev/operator/internal/civil"
)

// Slots is the number of hourly slots of the local week: the plugin draws
// the hold per hour in them and the operator keeps last week's marks by them.
const Slots = civil.HoursPerWeek

// The model's figures (docs/forecast.md#how-it-decides).
const (
	// DefaultColdStartCost is what one cold start seen by a person is worth
	// in awake minutes when Settings.ColdStartCost is zero.
	DefaultColdStartCost = 90 * time.Minute
	// StaleAfter: a workload no person used for this long is never woken
	// or held by the forecast.
	StaleAfter = 4 * 24 * time.Hour
	// PauseEarlyIdle is the floor of an early pause, and the shortest gap
	// kept with pauseEarly on.
	PauseEarlyIdle = 15 * time.Minute
	// MaxHoldPast bounds a hold: at most this long past idleAfter.
	MaxHoldPast = 4 * time.Hour
	// Gaps is how many idle gaps are kept.
	Gaps = 128
	// maxGap caps a kept gap's length: a return later than this counts as
	// no return (a hold never reaches it).
	maxGap = 4 * time.Hour
	// ArrivalDays is how many local days of first arrivals are kept.
	ArrivalDays = 28
	// arrivalQuiet: a day's first arrival is the first person after at
	// least this long without one.
	arrivalQuiet = 4 * time.Hour
	// PreWakeSure: a pre-wake needs someone to come by its give-up time at
	// least this often.
	PreWakeSure = 0.7
	// halfLifeDays: a gap's or an arrival's weight halves every two weeks.
	halfLifeDays = 14
	// maxAgeDays: older gaps are dropped (weight under a fifth), so a gap's
	// age fits five bits.
	maxAgeDays = 31
	// todWidth is the half-width of the time-of-day kernel: a gap begun this
	// far from now on the clock weighs nothing.
	todWidth = 180 // minutes
	// minWeight is the least weighted evidence an early pause or a
	// pre-wake acts on: about two matching gaps or days.
	minWeight = 1.5
	// holdPrior is the weight of a make-believe gap with no return a hold
	// counts beside the real ones, so that thin evidence holds little (one
	// alike gap of weight ½ and 45 minutes gives a 50 % chance) instead of
	// nothing: holding past idleAfter costs only the minutes held, so most
	// in-day gaps are worth it (docs/bench/forecast.md#tuning).
	holdPrior = 0.5
)

// Day-type weights: a gap or arrival on the same weekday counts fully, one
// on the same kind of day (Monday to Friday, or the weekend) half, another
// a tenth for gaps (the time of day still says something) and nothing for
// arrivals (a Sunday's first arrival says nothing of Monday's).
const (
	sameWeekday = 1.0
	sameDayType = 0.5
	otherDayGap = 0.1
)

// Settings are the workload's knobs the decisions depend on. They are not
// stored: the operator passes them from the spec at every load.
type Settings struct {
	// IdleAfter is the idle pause the forecast improves on.
	IdleAfter time.Duration
	// ColdStartCost prices one cold start seen by a person in awake time
	// (zero: DefaultColdStartCost).
	ColdStartCost time.Duration
	// PauseEarly keeps gaps from PauseEarlyIdle instead of IdleAfter.
	PauseEarly bool
	// MaxExtraAwake, a percentage (0: no cap), caps ExtraAwake: while
	// ExtraAwake is over it, the price is scaled down in proportion.
	MaxExtraAwake int
	// ExtraAwake is the awake time the forecast has added, as a share of
	// what idleness alone used, as the caller measures it.
	ExtraAwake float64
}

// cost is the price of a cold start in awake minutes, scaled down while
// the forecast's extra awake time is over its cap.
func (s Settings) cost() float64 {
	c := DefaultColdStartCost.Minutes()
	if s.ColdStartCost > 0 {
		c = s.ColdStartCost.Minutes()
	}
	if limit := float64(s.MaxExtraAwake) / 100; limit > 0 && s.ExtraAwake > limit {
		c *= limit / s.ExtraAwake
	}
	return c
}

// minGap is the shortest gap kept.
func (s Settings) minGap() time.Duration {
	if s.PauseEarly {
		return min(PauseEarlyIdle, s.IdleAfter)
	}
	return s.IdleAfter
}

// gap is one kept idle gap: the local day and minute of the week its idle
// began at, and its length in minutes (maxGap: no return within it).
type gap struct {
	day    int64
	minute int // of the local week, Monday 00:00 is 0, in 5-minute steps
	length int
}

// Arrival log values beside a minute of the day.
const (
	arrivalUnknown = math.MaxUint16     // the day was not watched
	arrivalNone    = math.MaxUint16 - 1 // nobody came after a quiet spell
)

// Forecast is one workload's learned gaps, first arrivals and resume
// times. The zero value is not usable: make one with New or Decode.
type Forecast struct {
	loc  *time.Location
	zone string
	set  Settings
	// hour is the local hour number (civil.Hour) being filled; hit says a
	// person was active in it; folds counts the hours ended since the
	// forecast began. Only last week's marks use them (OnFold).
	hour  int64
	hit   bool
	folds uint32
	// lastPerson is the latest person-caused activity (zero: none).
	lastPerson time.Time
	// gaps is a ring of the last Gaps gaps, next the place of the next one.
	gaps  []gap
	next  int
	count int
	// arrivals are the first arrivals, indexed by local day mod ArrivalDays.
	arrivals [ArrivalDays]uint16
	resumes  resumes
	onFold   func(slot int, busy, hit bool)
}

// New starts an empty forecast at now in loc.
func New(loc *time.Location, now time.Time, s Settings) *Forecast {
	f := &Forecast{loc: loc, zone: loc.String(), set: s, hour: civil.Hour(now, loc), gaps: make([]gap, Gaps)}
	for i := range f.arrivals {
		f.arrivals[i] = arrivalUnknown
	}
	return f
}

// Location returns the zone the forecast counts in.
func (f *Forecast) Location() *time.Location { return f.loc }

// OnFold has fn told of every hour that ends from now on: its slot,
// whether the forecast would hold a workload left idle at its start, and
// whether a person came in it. The operator keeps last week's hits and
// misses with it. It is not part of the encoded state.
func (f *Forecast) OnFold(fn func(slot int, busy, hit bool)) { f.onFold = fn }

// maxFoldHours bounds the hours told to OnFold after a long gap: a week.
const maxFoldHours = Slots

// Advance brings the forecast up to t: hours and days that ended before t
// are closed. A t in an hour already filled (or earlier) changes nothing.
func (f *Forecast) Advance(t time.Time) {
	h := civil.Hour(t, f.loc)
	if h <= f.hour {
		return
	}
	gap := h - f.hour
	fold := min(gap, maxFoldHours)
	dayBefore := f.day()
	for i := gap - fold; f.onFold != nil && i < gap; i++ {
		hr := f.hour + i
		f.onFold(civil.Slot(hr), f.slotHold(hr) > 0, i == 0 && f.hit)
	}
	f.hour, f.hit = h, false
	f.folds = satAdd(f.folds, uint64(gap))
	f.newDays(dayBefore, f.day())
}

// day is the local day being filled.
func (f *Forecast) day() int64 { return floorDiv(f.hour, civil.HoursPerDay) }

// newDays opens the days after from up to to: nobody came yet, and gaps
// past maxAgeDays are dropped.
func (f *Forecast) newDays(from, to int64) {
	if to <= from {
		return
	}
	for d := max(from+1, to-ArrivalDays+1); d <= to; d++ {
		f.arrivals[place(d)] = arrivalNone
	}
	for i := range f.gaps {
		if g := &f.gaps[i]; g.length > 0 && to-g.day > maxAgeDays {
			*g = gap{}
		}
	}
}

// RecordPerson records person-caused activity at t: it ends the gap since
// the latest person (kept when at least IdleAfter, or PauseEarlyIdle with
// pauseEarly) and may be the day's first arrival. Activity reported late,
// before the latest person, changes nothing. The latest person is kept to
// the second, as Encode stores it.
func (f *Forecast) RecordPerson(t time.Time) {
	f.Advance(t)
	t = time.Unix(t.Unix(), 0)
	if civil.Hour(t, f.loc) == f.hour {
		f.hit = true
	}
	if !t.After(f.lastPerson) {
		return
	}
	day, minute := civil.Day(t, f.loc)
	if day == f.day() && f.arrivals[place(day)] == arrivalNone &&
		(f.lastPerson.IsZero() || t.Sub(f.lastPerson) >= arrivalQuiet) {
		f.arrivals[place(day)] = uint16(minute)
	}
	if !f.lastPerson.IsZero() {
		if l := t.Sub(f.lastPerson); l >= f.set.minGap() && l >= time.Minute {
			f.keepGap(f.lastPerson, l)
		}
	}
	f.lastPerson = t
}

// keepGap puts a gap begun at start into the ring.
func (f *Forecast) keepGap(start time.Time, l time.Duration) {
	day, minute := civil.Day(start, f.loc)
	if f.day()-day > maxAgeDays {
		return
	}
	f.gaps[f.next] = gap{day: day, minute: weekMinute(day, minute), length: int(min(l, maxGap) / time.Minute)}
	f.next = (f.next + 1) % Gaps
	f.count = min(f.count+1, Gaps)
}

// weekMinute is the minute of the local week, in 5-minute steps.
func weekMinute(day int64, minute int) int {
	return civil.Weekday(day)*civil.MinutesPerDay + minute/5*5
}

// LastPerson returns the latest person-caused activity recorded (zero:
// none).
func (f *Forecast) LastPerson() time.Time { return f.lastPerson }

// Learned reports whether the forecast has any evidence to act on: a kept
// gap or a first arrival.
func (f *Forecast) Learned() bool {
	if f.count > 0 {
		return true
	}
	for _, a := range f.arrivals {
		if a < civil.MinutesPerDay {
			return true
		}
	}
	return false
}

// Hours returns how many hours of history the forecast has.
func (f *Forecast) Hours() int64 { return int64(f.folds) }

// SlotHolds returns, for each hour of the local week (Monday 00:00 first),
// the chance someone returns within the hold the forecast would choose for
// an idle stretch begun at the hour's start this week; 0 where it would
// not hold.
func (f *Forecast) SlotHolds() [Slots]float64 {
	var out [Slots]float64
	base := f.hour - int64(civil.Slot(f.hour))
	for i := range out {
		out[i] = f.slotHold(base + int64(i))
	}
	return out
}

// slotHold is SlotHolds' figure for the hour number h.
func (f *Forecast) slotHold(h int64) float64 {
	start := civil.HourStart(h, f.loc)
	idle := f.set.IdleAfter
	b, ok := f.best(start, idle, idle+MaxHoldPast, holdPrior)
	if !ok {
		return 0
	}
	return b.p
}

func satAdd(a uint32, b uint64) uint32 {
	if s := uint64(a) + b; s <= math.MaxUint32 {
		return uint32(s)
	}
	return math.MaxUint32
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// place is a local day's place in the arrival log.
func place(day int64) int64 { return day - floorDiv(day, ArrivalDays)*ArrivalDays }
