package schedule

import (
	"fmt"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Overrides is what the two override annotations say at one instant.
type Overrides struct {
	// KeepAwake: keep-awake-until is in force. Nothing pauses the workload
	// (idleness, the forecast, pause-until) and a paused one is woken.
	KeepAwake bool
	// KeepAwakeUntil is when KeepAwake ends.
	KeepAwakeUntil time.Time
	// KeepPaused: pause-until is in force and refuses the wake asked about.
	KeepPaused bool
	// PauseUntil is when pause-until ends (set while it is in force, whether
	// or not it refuses this wake).
	PauseUntil time.Time
	// Problems are the annotations that could not be read, each ignored; an
	// InvalidSetting event should carry them.
	Problems []error
}

// ReadOverrides reads keep-awake-until and pause-until (either may be "",
// absent) at now, for a wake from source (an activity source such as
// napwakev1alpha1.SourceRequest, or "" when no wake is being considered).
//
// A time at or before now has expired and is ignored; a value that is not an
// RFC 3339 time is ignored and reported in Problems. pause-until yields only
// to wake-requested. When both are in force keep-awake-until wins: it holds
// "whatever else says", and a `kubectl napwake pause --until` replaces it.
func ReadOverrides(keepAwakeUntil, pauseUntil string, now time.Time, source string) Overrides {
	var o Overrides
	if until, ok := readUntil(napwakev1alpha1.AnnotationKeepAwakeUntil, keepAwakeUntil, now, &o.Problems); ok {
		o.KeepAwake, o.KeepAwakeUntil = true, until
	}
	if until, ok := readUntil(napwakev1alpha1.AnnotationPauseUntil, pauseUntil, now, &o.Problems); ok && !o.KeepAwake {
		o.PauseUntil = until
		o.KeepPaused = source != napwakev1alpha1.SourceWakeRequested
	}
	return o
}

// readUntil parses one override; ok is true while it is in force.
func readUntil(name, value string, now time.Time, problems *[]error) (time.Time, bool) {
	if value == "" {
		return time.Time{}, false
	}
	until, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		*problems = append(*problems, fmt.Errorf("%s %q is not an RFC 3339 time such as %q: ignored", name, value, "2026-10-23T18:00:00Z"))
		return time.Time{}, false
	}
	return until, now.Before(until)
}
