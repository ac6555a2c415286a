package forecast

import (
	"math"
	"time"

	"napwake.dev/operator/internal/civil"
)

// Slots is the number of hourly slots of the local week.
const Slots = civil.HoursPerWeek

// The design's figures (docs/design/schedules-forecast.md#the-forecasts-decisions).
const (
	// BusyShare: a slot at least this busy is "usually busy".
	BusyShare = 0.5
	// QuietShare: a slot below this is "expected quiet".
	QuietShare = 0.05
	// HalfLifeWeeks: a week's weight halves every two weeks.
	HalfLifeWeeks = 2
	// StaleAfter: a workload no person used for this long is never woken by
	// the forecast.
	StaleAfter = 4 * 24 * time.Hour
	// HoldWithin: a busy slot holds a workload awake only if a person was
	// active this recently.
	HoldWithin = 2 * time.Hour
	// PauseEarlyIdle is how long a workload must be idle before it pauses
	// early.
	PauseEarlyIdle = 15 * time.Minute
	// HistoryHours: nothing acts before one full week of hours has ended.
	HistoryHours = Slots
)

// maxFoldWeeks bounds the work of catching up after a long gap (an operator
// down for months): after 26 weeks without a person every share is 2^-13 of
// what it was, 0 once stored in a byte, so the rest of the gap only counts.
const maxFoldWeeks = 26

// decay is a week's weight relative to the week after it.
var decay = math.Pow(2, -1.0/HalfLifeWeeks)

// shareScale: a share is stored in a byte, 0 to 1 in steps of 1/255,
// rounded down: at most 1/255 low each week, 0.013 in the long run, against
// thresholds of 0.05 and 0.5.
const shareScale = 255

// Forecast is one workload's learned week and resume times. The zero value is
// not usable: make one with New or Decode.
type Forecast struct {
	loc  *time.Location
	zone string
	// hour is the local hour number (civil.Hour) being filled; hit says a
	// person was active in it.
	hour int64
	hit  bool
	// folds is the number of hours that have ended since the forecast began;
	// the first of them was slot civil.Slot(hour-folds).
	folds uint32
	share [Slots]uint8
	// lastPerson is the latest person-caused activity (zero: none).
	lastPerson time.Time
	resumes    resumes
	// onFold, when set, is told of every hour folded (OnFold).
	onFold func(slot int, busy, hit bool)
}

// New starts an empty forecast at now in loc.
func New(loc *time.Location, now time.Time) *Forecast {
	return &Forecast{loc: loc, zone: loc.String(), hour: civil.Hour(now, loc)}
}

// OnFold has fn told of every hour folded from now on: its slot, whether
// the slot was usually busy (share at least BusyShare) before the hour
// counted, and whether a person came in it. The operator keeps last week's
// hits and misses with it. Hours of a gap past maxFoldWeeks are not folded,
// so not told. It is not part of the encoded state.
func (f *Forecast) OnFold(fn func(slot int, busy, hit bool)) { f.onFold = fn }

// Location returns the zone the week is counted in.
func (f *Forecast) Location() *time.Location { return f.loc }

// Advance brings the week up to t: every hour that ended before t is folded
// into its slot. A t in an hour already filled (or earlier) changes nothing.
func (f *Forecast) Advance(t time.Time) {
	h := civil.Hour(t, f.loc)
	if h <= f.hour {
		return
	}
	gap := h - f.hour
	n := min(gap, maxFoldWeeks*Slots)
	for range n {
		f.fold(civil.Slot(f.hour), f.hit)
		f.hour++
		f.folds = satAdd(f.folds, 1)
		f.hit = false
	}
	f.hour = h
	f.folds = satAdd(f.folds, uint64(gap-n))
}

// fold ends one week of a slot, hit or not; f.hour is the hour ending and
// f.folds the hours ended before it.
func (f *Forecast) fold(slot int, hit bool) {
	if f.onFold != nil {
		f.onFold(slot, f.shareOf(slot) >= BusyShare, hit)
	}
	seen := f.weight(f.seen(slot))
	s := decay * float64(f.share[slot]) / shareScale * seen
	if hit {
		s++
	}
	// Rounded down (but for float noise): rounded to nearest, 1/255 would
	// decay to 0.71/255 and back to 1/255 for ever.
	f.share[slot] = uint8(math.Floor(s/(1+decay*seen)*shareScale + 1e-6))
}

// seen returns how many weeks of slot have ended.
func (f *Forecast) seen(slot int) uint32 {
	first := civil.Slot(f.hour - int64(f.folds))
	n := f.folds / Slots
	if (slot-first+Slots)%Slots < int(f.folds%Slots) {
		n++
	}
	return n
}

// weight is the decayed count of n weeks: 1 + d + … + d^(n-1).
func (f *Forecast) weight(n uint32) float64 {
	return (1 - math.Pow(decay, float64(n))) / (1 - decay)
}

// RecordPerson records person-caused activity at t. Activity reported late,
// in an hour already folded, still counts as the latest person (for the
// 4-day and 2-hour rules) but no longer fills its slot. The latest person is
// kept to the second, as Encode stores it.
func (f *Forecast) RecordPerson(t time.Time) {
	f.Advance(t)
	if civil.Hour(t, f.loc) == f.hour {
		f.hit = true
	}
	if t = time.Unix(t.Unix(), 0); t.After(f.lastPerson) {
		f.lastPerson = t
	}
}

// LastPerson returns the latest person-caused activity recorded (zero:
// none).
func (f *Forecast) LastPerson() time.Time { return f.lastPerson }

// Weeks returns how many weeks of history the forecast has.
func (f *Forecast) Weeks() float64 { return float64(f.folds) / Slots }

// Learned reports whether a full week of history has ended, so it may act.
func (f *Forecast) Learned() bool { return f.folds >= HistoryHours }

// Shares returns the week, Monday 00:00 first: each slot's share of recent
// weeks with a person in it.
func (f *Forecast) Shares() [Slots]float64 {
	var out [Slots]float64
	for i, s := range f.share {
		out[i] = float64(s) / shareScale
	}
	return out
}

// slotAt returns the start of the slot t is in, its share and the start of
// the next slot.
func (f *Forecast) slotAt(t time.Time) (start time.Time, share float64, next time.Time) {
	h := civil.Hour(t, f.loc)
	return civil.HourStart(h, f.loc), f.shareOf(civil.Slot(h)), civil.HourStart(h+1, f.loc)
}

func satAdd(a uint32, b uint64) uint32 {
	if s := uint64(a) + b; s <= math.MaxUint32 {
		return uint32(s)
	}
	return math.MaxUint32
}
