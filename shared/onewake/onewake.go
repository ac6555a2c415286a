// Package onewake owns the rule "one wake per pause": however many callers
// reach however many doorman pods, a pause is woken by one stamp of
// napwake.dev/last-request and one WokenByRequest event, and the operator
// acts on a stamp only when it was made in the pause it would end
// (docs/design/doorman.md#one-wake-per-pause). The doorman's request wake,
// its click, its pages and the operator's decision all ask this package,
// so the rule and its times are said once.
//
// Times compare as they are stored: status.pause.startedAt in whole
// seconds, a stamp to the nanosecond; a stamp in the pause's own second
// counts as in it (docs/design/time.md#comparing-times), since a request
// can only reach the doorman once the pause has begun.
package onewake

import "time"

const (
	// WakeStands is how long a stamp of a pause stands while the workload
	// still reads Paused: the operator acts on a stamp within a second or
	// two, and the phase a doorman sees lags by less, so a pause still
	// Paused this long after its stamp contradicts it (the operator missed
	// it, or was away) and is stamped again. Within it, no caller on any
	// doorman pod stamps the pause again.
	WakeStands = 30 * time.Second
	// WokenFor is how long a stamped pause reads as waking to the doorman:
	// the phase it sees can lag the operator's by seconds, and a page load
	// meanwhile gets the waking-up page, not the asleep one.
	WokenFor = 5 * time.Minute
	// ClickInterval is how often a click may wake a workload, whichever
	// doorman pod it reaches: a click within it of the last wake request
	// is too soon.
	ClickInterval = time.Minute
	// MaxClockSkew is how far in the future a stamp may be and still
	// count: writers' clocks differ a little, but a far-future time would
	// keep a workload awake, or refuse every click, for ever.
	MaxClockSkew = time.Minute
	// AnsweredRetryFor is how long the wake of a caller that was answered
	// (a browser shown the waking-up page, a click) goes on being retried
	// after its connection is gone: a wake the API server refused must not
	// end with the one try it had.
	AnsweredRetryFor = time.Minute
	// PatchTimeout bounds one wake stamp's write: an API server that
	// accepts the connection and never answers must not stall the retries.
	PatchTimeout = 5 * time.Second
)

// Pause is one pause of a workload, by its start as status.pause.startedAt
// stores it. The zero Pause is no pause: nothing is in it.
type Pause struct{ start time.Time }

// Of is the pause that began at startedAt.
func Of(startedAt time.Time) Pause { return Pause{start: startedAt.Truncate(time.Second)} }

// In reports whether a stamp made at t is in the pause: at or after its
// start, to the second.
func (p Pause) In(t time.Time) bool {
	return !p.start.IsZero() && !t.IsZero() && !t.Before(p.start)
}

// Stands reports whether a wake stamp made at stamp is in the pause and
// younger than WakeStands at now: nobody stamps the pause again.
func (p Pause) Stands(stamp, now time.Time) bool {
	return p.In(stamp) && now.Sub(stamp) < WakeStands
}

// Woken reports whether a wake stamp made at stamp is in the pause and
// younger than WokenFor at now: the pause is waking, or about to.
func (p Pause) Woken(stamp, now time.Time) bool {
	return p.In(stamp) && now.Sub(stamp) < WokenFor
}

// ClickTooSoon reports whether a click at now comes within ClickInterval of
// the last wake request, last; a last more than MaxClockSkew ahead of now
// is ignored, so a bad clock cannot refuse every click.
func ClickTooSoon(last, now time.Time) bool {
	return !last.IsZero() && now.Before(last.Add(ClickInterval)) && !last.After(now.Add(MaxClockSkew))
}
