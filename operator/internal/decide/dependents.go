package decide

import "time"

// Dependents is what a workload's dependents say to its cycle.
type Dependents struct {
	// WokeAt is when a dependent whose wake reaches this workload began
	// that wake; zero when none did since the pause began. It wakes a
	// Paused workload and calls off a pause (source "dependent"); it is
	// not read while Running or Resuming, so it never overwrites the
	// source of a workload's own wake.
	WokeAt time.Time
	// WokenBy names that dependent for the event: "preview-42/front
	// (through preview-42/api)".
	WokenBy string
	// Held is true while a declared dependent is awake: a Running workload
	// is not paused for idleness, and its pauseAt is cleared (a cleared
	// pauseAt is how the graph knows it is awake only because it is held).
	Held bool
	// HeldUntil, when not zero, is when the hold may end with nothing
	// else changing: Wait comes back then.
	HeldUntil time.Time
	// ReleasedAt is when the last holder stopped being awake: while
	// Running and not held, the idle clock counts from the later of
	// lastActivity and this. It is not activity: it moves no
	// lastActivity, calls off no pause and wakes nothing.
	ReleasedAt time.Time
}
