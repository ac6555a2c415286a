package decide

import (
	"strconv"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// What Next answers: one Step, the write it is and the event it brings.

// Kind is what a Step does.
type Kind int

const (
	// Wait: nothing to write now; come back after RequeueAfter.
	Wait Kind = iota
	// PatchStatus persists Step.State.
	PatchStatus
	// Route leads the workload's Services to the doorman. It comes after
	// the pause is persisted and before the scale to 0, and again once a
	// reconcile while Pausing or Paused, to keep the routes current. A
	// routing error never holds the pause up.
	Route
	// Scale sets the target's replicas to Step.Replicas through the scale
	// subresource.
	Scale
	// Unroute takes the doorman's routes away: a woken workload has a Ready
	// pod, and Running is persisted after it.
	Unroute
)

// String names the kind, for logs and test failures.
func (k Kind) String() string {
	switch k {
	case Wait:
		return "Wait"
	case PatchStatus:
		return "PatchStatus"
	case Route:
		return "Route"
	case Scale:
		return "Scale"
	case Unroute:
		return "Unroute"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Step is one write.
type Step struct {
	Kind Kind
	// State is the whole new State for PatchStatus.
	State State
	// Replicas for Scale.
	Replicas int32
	// Event to emit once the step succeeded; Reason is empty for none.
	Event Event
	// Paused is set when this step begins a pause, for metrics.
	Paused napwakev1alpha1.PauseReason
	// Woken names the wake source when this step begins a wake, for metrics.
	Woken string
	// WokenAt is when the waking signal fired, with Woken: the start of
	// the wake's timeline (status.lastWake).
	WokenAt time.Time
	// PausedFor is how long the ended pause lasted, with Woken.
	PausedFor time.Duration
	// ScaleAlong, on the PatchStatus that begins a wake, is the count the
	// Scale step after it would write; the reconciler writes that scale
	// beside the status rather than after it, so a held caller waits for
	// one write, not two. Only a wake whose signal stays on the
	// ManagedWorkload (last-request, last-activity, wake-requested) has
	// it: should the scale land and the status write not, the next
	// reconcile reads that signal again and begins the same wake, by the
	// same source (docs/design/pause-wake.md#the-wakes-two-writes).
	ScaleAlong int32
	// ResumeTook is wake → Ready, when this step makes it Running.
	ResumeTook time.Duration
	// RequeueAfter is when to look again if nothing else happens (Wait).
	RequeueAfter time.Duration
	// ForecastAction names the forecast's action this step takes
	// (napwakev1alpha1.ForecastActionPreWake, …), for its figures.
	ForecastAction string
}

// Event is a Kubernetes event about the ManagedWorkload.
type Event struct {
	Type    string // corev1.EventTypeNormal or Warning
	Reason  string
	Message string
}
