// Package metrics holds the doorman's Prometheus metrics in a registry of
// its own (docs/design/components.md#metrics). Labels are bounded: results and cap names,
// never an address, path or workload.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"napwake.dev/shared/buildinfo"
	"napwake.dev/shared/version"
)

// Results of napwake_doorman_wakes_total.
const (
	ResultWoken      = "woken"       // held, then passed to a woken pod
	ResultPassed     = "passed"      // passed straight to a Ready pod
	ResultTurnedAway = "turned_away" // 503s and closed connections counted as turned away
	ResultTimedOut   = "timed_out"   // no Ready pod within maxWait
	ResultFailed     = "failed"      // Ready pods, but none could be reached
)

// Metrics are the doorman's metrics.
type Metrics struct {
	Registry   *prometheus.Registry
	Wakes      *prometheus.CounterVec
	Wait       prometheus.Histogram
	Held       prometheus.Gauge
	Passing    prometheus.Gauge
	Rejections *prometheus.CounterVec
}

// New returns the metrics, registered in a new registry with the Go and
// process collectors and napwake_build_info.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Wakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "napwake_doorman_wakes_total",
			Help: "Connections to paused workloads by outcome: woken, passed, turned_away, timed_out, failed.",
		}, []string{"result"}),
		Wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "napwake_doorman_wait_seconds",
			Help:    "How long a connection was held before it was passed on.",
			Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600},
		}),
		Held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "napwake_doorman_held_connections",
			Help: "Connections held waiting for a Ready pod.",
		}),
		Passing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "napwake_doorman_passing_connections",
			Help: "Connections being passed through to a pod.",
		}),
		Rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "napwake_doorman_rejections_total",
			Help: "Connections or wakes refused by a cap of the Limits table, by cap.",
		}, []string{"cap"}),
	}
	for _, r := range []string{ResultWoken, ResultPassed, ResultTurnedAway, ResultTimedOut, ResultFailed} {
		m.Wakes.WithLabelValues(r)
	}
	m.Registry.MustRegister(m.Wakes, m.Wait, m.Held, m.Passing, m.Rejections, buildinfo.Collector(version.Get("doorman")),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry at /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
