package decide

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestActivitySignals(t *testing.T) {
	const (
		relies     = "relies on requests through the doorman, the activity and wake annotations"
		reliesOnly = "the cluster serves no metrics.k8s.io: relies only on requests through the doorman, the activity and wake annotations"
		failing    = "; its Prometheus activity query is failing (see the operator's log)"
		noURL      = "; its Prometheus activity query is not evaluated: the operator has no --prometheus-url (Helm: operator.prometheusURL)"
	)
	on, off := metav1.ConditionTrue, metav1.ConditionFalse
	configured, unavailable := napwakev1alpha1.ReasonSignalsConfigured, napwakev1alpha1.ReasonUsageUnavailable
	for _, tc := range []struct {
		name string
		sig  Signals
		want Condition
	}{
		{"no metrics API and no query: only requests and annotations", Signals{}, Condition{off, unavailable, reliesOnly}},
		{"no metrics API and a query that runs: the query counts", Signals{Query: QueryOK},
			Condition{on, configured, relies + ", and its Prometheus activity query"}},
		{"no metrics API and a failing query: only requests and annotations, and the query is failing", Signals{Query: QueryFailing},
			Condition{off, unavailable, reliesOnly + failing}},
		{"no metrics API and a query with no --prometheus-url: it is not evaluated", Signals{Query: QueryNoURL},
			Condition{off, unavailable, reliesOnly + noURL}},
		{"the metrics API and no query: CPU usage counts", Signals{Usage: true},
			Condition{on, configured, relies + ", and CPU usage from metrics.k8s.io"}},
		{"the metrics API and a query that runs: both count", Signals{Usage: true, Query: QueryOK},
			Condition{on, configured, relies + ", CPU usage from metrics.k8s.io, and its Prometheus activity query"}},
		{"the metrics API and a failing query: CPU usage counts, and the query is failing", Signals{Usage: true, Query: QueryFailing},
			Condition{on, configured, relies + ", and CPU usage from metrics.k8s.io" + failing}},
		{"the metrics API and a query with no --prometheus-url: CPU usage counts, the query is not evaluated", Signals{Usage: true, Query: QueryNoURL},
			Condition{on, configured, relies + ", and CPU usage from metrics.k8s.io" + noURL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eq(t, ActivitySignals(tc.sig), tc.want)
		})
	}
}
