package decide

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// QueryState is what became of a workload's Prometheus activity query
// (spec.activity.prometheus) in this reconcile.
type QueryState int

const (
	// QueryNone: no query is configured.
	QueryNone QueryState = iota
	// QueryOK: the query was evaluated.
	QueryOK
	// QueryFailing: the query is configured and its evaluation failed.
	QueryFailing
	// QueryNoURL: the query is configured but the operator has no
	// --prometheus-url to evaluate it with.
	QueryNoURL
)

// Signals is which activity signals a workload relies on beyond requests
// and annotations, which it always does.
type Signals struct {
	// Usage is true when the cluster serves metrics.k8s.io, so CPU usage
	// counts.
	Usage bool
	// Query is what became of its Prometheus activity query.
	Query QueryState
}

// Condition is what a status condition says.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// ActivitySignals is the ActivitySignals condition: True
// (SignalsConfigured) when something beyond requests and annotations
// watches the workload (CPU usage, or its own Prometheus query that runs),
// else False (UsageUnavailable). The message names what it relies on and
// what is wrong with its query.
func ActivitySignals(sig Signals) Condition {
	base := "requests through the doorman, the activity and wake annotations"
	var with []string
	if sig.Usage {
		with = append(with, "CPU usage from metrics.k8s.io")
	}
	if sig.Query == QueryOK {
		with = append(with, "its Prometheus activity query")
	}
	msg := "relies on " + base
	for i, w := range with {
		if i == len(with)-1 {
			msg += ", and " + w
		} else {
			msg += ", " + w
		}
	}
	switch sig.Query {
	case QueryFailing:
		msg += "; its Prometheus activity query is failing (see the operator's log)"
	case QueryNoURL:
		msg += "; its Prometheus activity query is not evaluated: the operator has no --prometheus-url (Helm: operator.prometheusURL)"
	}
	if len(with) > 0 {
		return Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonSignalsConfigured, Message: msg}
	}
	if !sig.Usage {
		msg = "the cluster serves no metrics.k8s.io: " + strings.Replace(msg, "relies on ", "relies only on ", 1)
	}
	return Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonUsageUnavailable, Message: msg}
}
