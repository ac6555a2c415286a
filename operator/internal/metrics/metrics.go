// Package metrics defines the operator's Prometheus metrics
// (docs/design/components.md#metrics): workloads by phase, pauses by
// reason, wakes by source, resume
// duration from wake to Ready, each wake step's duration, the replica-seconds pauses saved, the
// forecast's figures (docs/design/schedules-forecast.md#its-figures), and
// per-ManagedWorkload series (workload.go, docs/metrics.md). Labels are
// bounded: phases, pause reasons, forecast modes and activity sources are
// fixed sets, and the per-workload series' namespace and name are bounded
// by the ManagedWorkloads, whose deletion removes them.
//
// It must not register into a global registry by itself, nor take an
// unbounded label (an IP, a path, a caller).
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/buildinfo"
	"napwake.dev/shared/version"
)

// Metrics are the operator's own metrics. Make one with New and register it
// once (main registers into controller-runtime's registry).
type Metrics struct {
	// Pauses counts pauses begun, by reason (Idle, Requested, Forecast).
	Pauses *prometheus.CounterVec
	// Wakes counts wakes begun, by source (request, annotation, scaled, …),
	// a pause called off included.
	Wakes *prometheus.CounterVec
	// ResumeSeconds is the time from a wake to a Ready pod.
	ResumeSeconds prometheus.Histogram
	// WakeStepSeconds is how long each step of a wake took, by step
	// (status.lastWake's steps: woken, scaled, scheduled, started, ready,
	// running), observed once per wake as it becomes Running.
	WakeStepSeconds *prometheus.HistogramVec
	// PausedReplicaSeconds is the pod-time Napwake saved: each pause's
	// saved replicas times its length so far, pauses under way included.
	PausedReplicaSeconds *Saved
	// RouteMoves counts routed EndpointSlices rewritten because the Ready
	// doorman pods changed, by result (ok, error).
	RouteMoves *prometheus.CounterVec
	// RouteMoveSeconds is the time to rewrite every routed slice then.
	RouteMoveSeconds prometheus.Histogram
	// Forecast are the forecast's figures (forecast.go).
	Forecast *Forecast
	// Workloads are the per-ManagedWorkload series (workload.go); nil
	// turns them off (--per-workload-metrics=false).
	Workloads *Workloads
}

// New makes the metrics, unregistered.
func New() *Metrics {
	return &Metrics{
		Pauses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "napwake_operator_pauses_total",
			Help: "Pauses begun, by reason: Idle, Requested or Forecast.",
		}, []string{"reason"}),
		Wakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "napwake_operator_wakes_total",
			Help: "Wakes begun (pauses called off included), by the activity source that caused them.",
		}, []string{"source"}),
		ResumeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "napwake_operator_resume_duration_seconds",
			Help: "Time from a wake to the first Ready pod.",
			// 0.5 s to about 17 min: images pull and apps start in seconds to minutes.
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 12),
		}),
		WakeStepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "napwake_operator_wake_step_seconds",
			Help: "Time each step of a wake took, by step: woken, scaled, scheduled, started, ready, running.",
			// 10 ms to about 10 min: the operator's steps take milliseconds,
			// an image pull or an app's start seconds to minutes.
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 13),
		}, []string{"step"}),
		PausedReplicaSeconds: newSaved(),
		RouteMoves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "napwake_operator_route_moves_total",
			Help: "EndpointSlices whose endpoints were rewritten because the Ready doorman pods changed, by result.",
		}, []string{"result"}),
		RouteMoveSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "napwake_operator_route_move_seconds",
			Help: "Time to rewrite every routed EndpointSlice after the Ready doorman pods changed.",
			// 50 ms to about 25 s: a thousand Services move in about a second.
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 10),
		}),
		Forecast:  newForecast(),
		Workloads: newWorkloads(),
	}
}

// Register registers the metrics, napwake_build_info, and a
// workloads-by-phase gauge that counts the ManagedWorkloads in reader (the
// manager's cache) at each scrape; the paused replica-seconds and the
// per-workload series read reader too, timed by clk.
func (m *Metrics) Register(reg prometheus.Registerer, reader client.Reader, clk clock.PassiveClock) error {
	m.PausedReplicaSeconds.watch(reader, clk)
	cs := append([]prometheus.Collector{m.Pauses, m.Wakes, m.ResumeSeconds, m.WakeStepSeconds, m.PausedReplicaSeconds, m.RouteMoves, m.RouteMoveSeconds,
		&phases{reader: reader}, buildinfo.Collector(version.Get("napwake-operator"))}, m.Forecast.collectors()...)
	if m.Workloads != nil {
		m.Workloads.watch(reader, clk)
		cs = append(cs, m.Workloads)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// RecordPause counts a pause begun.
func (m *Metrics) RecordPause(reason napwakev1alpha1.PauseReason) {
	m.Pauses.WithLabelValues(string(reason)).Inc()
}

// WokenByDeletion is the wakes_total source of a ManagedWorkload deleted
// while paused, whose target's replicas are restored before it goes. It is
// not an activity source: status.lastActivitySource never holds it.
const WokenByDeletion = "deleted"

// RecordWake counts a wake begun that ends the pause, which saved replicas
// and lasted pausedFor (0: no longer than a scrape has already counted);
// a wake by a request or a click is also the workload's cold start.
func (m *Metrics) RecordWake(source string, pause PauseKey, replicas int32, pausedFor time.Duration) {
	m.Wakes.WithLabelValues(source).Inc()
	m.Workloads.woken(pause.UID, source)
	m.PausedReplicaSeconds.ended(pause, float64(replicas)*pausedFor.Seconds())
}

// RecordResumed observes a wake of the ManagedWorkload uid that reached a
// Ready pod.
func (m *Metrics) RecordResumed(uid types.UID, took time.Duration) {
	m.ResumeSeconds.Observe(took.Seconds())
	m.Workloads.resumed(uid, took)
}

// RecordWakeSteps observes each step of a completed wake's timeline w;
// nothing for nil or a wake still under way.
func (m *Metrics) RecordWakeSteps(w *napwakev1alpha1.LastWakeStatus) {
	if w == nil || w.TotalMilliseconds == 0 {
		return
	}
	for _, s := range w.Steps {
		m.WakeStepSeconds.WithLabelValues(string(s.Name)).Observe(float64(s.Milliseconds) / 1000)
	}
}

var phaseDesc = prometheus.NewDesc("napwake_operator_workloads",
	"ManagedWorkloads by phase (\"\" before the first reconcile).", []string{"phase"}, nil)

// phases is a collector reading the phases from the cache at scrape time, so
// the count can never drift from what is stored.
type phases struct{ reader client.Reader }

func (p *phases) Describe(ch chan<- *prometheus.Desc) { ch <- phaseDesc }

func (p *phases) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list napwakev1alpha1.ManagedWorkloadList
	if err := p.reader.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(phaseDesc, err)
		return
	}
	counts := map[napwakev1alpha1.Phase]int{
		napwakev1alpha1.PhaseRunning: 0, napwakev1alpha1.PhasePausing: 0,
		napwakev1alpha1.PhasePaused: 0, napwakev1alpha1.PhaseResuming: 0,
	}
	for i := range list.Items {
		counts[list.Items[i].Status.Phase]++
	}
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(phaseDesc, prometheus.GaugeValue, float64(n), string(phase))
	}
}
