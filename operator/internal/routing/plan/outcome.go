package plan

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Routing a paused workload ends in an Outcome: the router gathers, asks
// Decide, allocates ports and writes slices; what comes of it (the
// WakeOnRequest condition, the warnings, when to look again) is decided
// here from the Decision and the few facts acting on it found (Acted), so
// the router only acts (docs/design/pause-wake.md#routing-a-service).

// Acted is what the router found while acting on a Decision that the
// outcome depends on.
type Acted struct {
	// Ask is wake.mode Ask.
	Ask bool
	// NoProbe: MessageNoReadinessProbe applies (no probe in a template
	// that is the workload's own; one made up from a scale's selector
	// says nothing of probes).
	NoProbe bool
	// Routed: some Service port has a doorman port.
	Routed bool
	// PortsFailed is why no port could be allocated, if none could;
	// TooManyPorts when a cap refused them rather than a full range.
	PortsFailed  string
	TooManyPorts bool
}

// Warning is a Warning event the router gives once per pause and reason.
type Warning struct{ Reason, Message string }

// Outcome is what routing comes to once the routes are in status.
type Outcome struct {
	Condition Condition
	Warnings  []Warning
}

// Outcome is the condition and warnings of d acted on as a says.
func (d Decision) Outcome(a Acted) Outcome {
	o := Outcome{Condition: d.Condition(a.Ask, a.NoProbe)}
	if a.PortsFailed != "" {
		reason := napwakev1alpha1.ReasonNoFreePort
		if a.TooManyPorts {
			reason = napwakev1alpha1.ReasonTooManyPorts
		}
		o.Condition = Condition{Status: metav1.ConditionFalse, Reason: reason, Message: a.PortsFailed + "; no Service is routed"}
	}
	if a.Routed && a.NoProbe {
		o.Warnings = append(o.Warnings, Warning{napwakev1alpha1.EventNoReadinessProbe,
			MessageNoReadinessProbe + "; give the app a readiness probe that passes once it can serve"})
	}
	if lb := d.UnsupportedLB(); len(lb) > 0 {
		o.Warnings = append(o.Warnings, Warning{napwakev1alpha1.EventUnsupportedLB,
			"not routed, in GKE NEGs (turn on the NEG forwarder to route them): " + strings.Join(lb, ", ")})
	}
	if len(d.Invalid) > 0 {
		o.Warnings = append(o.Warnings, Warning{napwakev1alpha1.EventInvalidSetting, strings.Join(d.Invalid, "; ")})
	}
	return o
}

// Shared is the condition once the slices are written, when another paused
// workload's route already serves some of the Services (Service name →
// that ManagedWorkload): the doorman wakes every workload routed for a
// Service port a request reaches that wakes on request, so this one wakes
// too unless it asks (docs/pause.md).
func (o Outcome) Shared(shared map[string]string) Condition {
	c := o.Condition
	if len(shared) == 0 {
		return c
	}
	names := make([]string, 0, len(shared))
	for svc := range shared {
		names = append(names, svc)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, svc := range names {
		parts = append(parts, fmt.Sprintf("%s through ManagedWorkload %s's route", svc, shared[svc]))
	}
	c.Message += "; shared with other paused workloads, a request wakes each of them that wakes on request (one that asks wakes only on a click): " + strings.Join(parts, ", ")
	return c
}

// Recheck is when routing is decided again after the slices are written.
type Recheck int

const (
	// RecheckNone: only a change of what it reads brings it back.
	RecheckNone Recheck = iota
	// RecheckSoon: within the retry pause (doorman pods left out of the
	// slices until they listen; the NEG forwarder not Ready yet, whose
	// pod's image pull failing changes nothing the router watches).
	RecheckSoon
	// RecheckLater: within the redecide pause (a Service shared with
	// another paused workload, to route it itself if the other's slice
	// goes while this one still sleeps; a Service other pods serve).
	RecheckLater
)

// Recheck is when to decide again: deaf when some doorman pods were left
// out because they do not listen yet, shared when another workload's
// route serves some Service, forwarderNotReady while the NEG forwarder has
// no Ready pod.
func (d Decision) Recheck(deaf, shared, forwarderNotReady bool) Recheck {
	switch {
	case deaf:
		return RecheckSoon
	case shared || d.ServedByOtherPods():
		return RecheckLater
	case forwarderNotReady:
		return RecheckSoon
	}
	return RecheckNone
}

// The conditions of a workload routing cannot serve at all, decided before
// anything is gathered.

// RoutingOff is the condition with the doorman turned off.
func RoutingOff() Condition {
	return Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonDoormanDisabled,
		Message: "routing is off (--doorman-service=\"\"): requests to the paused workload fail"}
}

// TargetGone is the condition once the target (kind, name) is deleted.
func TargetGone(kind, name string) Condition {
	return Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonTargetNotFound,
		Message: fmt.Sprintf("%s %s is gone, so nothing would start its pods: routing removed", kind, name)}
}

// NoDoorman is the condition while no pod of the doorman Service is Ready.
func NoDoorman(service string) Condition {
	return Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonDoormanUnavailable,
		Message: fmt.Sprintf("no doorman pod is Ready (Service %s): routing removed until one is", service)}
}
