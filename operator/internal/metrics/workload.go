package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// The per-ManagedWorkload series, labelled namespace and name: one set per
// ManagedWorkload in the cache, so their number is bounded by the
// ManagedWorkloads and a deleted one's series go at the next scrape.
var (
	workloadLabels = []string{"namespace", "name"}

	workloadPhaseDesc = prometheus.NewDesc("napwake_operator_workload_phase",
		"1 for the phase the ManagedWorkload is in, 0 for the others (none before its first reconcile).",
		[]string{"namespace", "name", "phase"}, nil)
	workloadWakeDesc = prometheus.NewDesc("napwake_operator_workload_last_wake_duration_seconds",
		"Time from the ManagedWorkload's last wake to its first Ready pod; absent until a wake this operator saw ends.",
		workloadLabels, nil)
	workloadColdStartsDesc = prometheus.NewDesc("napwake_operator_workload_cold_starts_total",
		"Wakes a person waited for: wakes by a request or a Wake it click (source request), pauses called off included.",
		workloadLabels, nil)
	workloadTurnedAwayDesc = prometheus.NewDesc("napwake_operator_workload_turned_away_requests_total",
		"Requests the doorman turned away while the ManagedWorkload was paused (what status.turnedAway gained since the operator started).",
		workloadLabels, nil)
	workloadSavedDesc = prometheus.NewDesc("napwake_operator_workload_paused_replica_seconds_total",
		"Replica-seconds the ManagedWorkload's pauses saved: status.savings plus the pause under way so far.",
		workloadLabels, nil)
)

// phasesInOrder are the phases napwake_operator_workload_phase reports,
// one series each, as kube-state-metrics reports a pod's phase.
var phasesInOrder = []napwakev1alpha1.Phase{
	napwakev1alpha1.PhaseRunning, napwakev1alpha1.PhasePausing,
	napwakev1alpha1.PhasePaused, napwakev1alpha1.PhaseResuming,
}

// Workloads is the per-ManagedWorkload collector. What status holds
// (phase, turned-away requests, savings) it reads from the cache at each
// scrape; what status does not keep (cold starts, the last wake's
// duration) the reconciler records as it happens, by UID, and a scrape
// reports it only for ManagedWorkloads still in the cache and forgets the
// rest. A nil *Workloads records nothing (--per-workload-metrics=false).
type Workloads struct {
	mu      sync.Mutex
	reader  client.Reader // nil: nothing is reported
	clock   clock.PassiveClock
	elected <-chan struct{} // nil: always report
	byUID   map[types.UID]*workloadTally
}

// workloadTally is what one ManagedWorkload's series need beyond its
// status.
type workloadTally struct {
	coldStarts float64
	lastWake   time.Duration // 0: no wake ended yet
	// The turned-away counter, and the pause status.turnedAway counted
	// last with its count then; known once a scrape has seen the workload.
	turnedAway      float64
	turnedAwayPause time.Time
	turnedAwaySeen  int64
	turnedAwayKnown bool
	// saved is the most the savings series has shown: a cache behind the
	// wake's write could otherwise show a little less after more.
	saved float64
}

func newWorkloads() *Workloads {
	return &Workloads{clock: clock.RealClock{}, byUID: map[types.UID]*workloadTally{}}
}

// OnlyWhenElected makes a scrape report nothing until elected is closed
// (the manager's Elected channel): only the leader reconciles, so only its
// counts are whole, and replicas do not report each workload twice.
func (w *Workloads) OnlyWhenElected(elected <-chan struct{}) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.elected = elected
}

func (w *Workloads) watch(reader client.Reader, clk clock.PassiveClock) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reader, w.clock = reader, clk
}

func (w *Workloads) tally(uid types.UID) *workloadTally {
	t := w.byUID[uid]
	if t == nil {
		t = &workloadTally{}
		w.byUID[uid] = t
	}
	return t
}

// woken counts a wake of the ManagedWorkload uid caused by source.
func (w *Workloads) woken(uid types.UID, source string) {
	if w == nil || uid == "" || source != napwakev1alpha1.SourceRequest {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tally(uid).coldStarts++
}

// resumed records that the ManagedWorkload uid's wake took took.
func (w *Workloads) resumed(uid types.UID, took time.Duration) {
	if w == nil || uid == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tally(uid).lastWake = took
}

// Describe implements prometheus.Collector.
func (w *Workloads) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{workloadPhaseDesc, workloadWakeDesc, workloadColdStartsDesc, workloadTurnedAwayDesc, workloadSavedDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. On a cache error it reports
// nothing but the error, and keeps its tallies.
func (w *Workloads) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reader == nil {
		return
	}
	if w.elected != nil {
		select {
		case <-w.elected:
		default:
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list napwakev1alpha1.ManagedWorkloadList
	// The cache's own objects, not copies: a scrape only reads them, and
	// copying every status (forecast weeks included) each scrape is waste.
	if err := w.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(workloadPhaseDesc, err)
		return
	}
	now := w.clock.Now()
	live := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		mw := &list.Items[i]
		live[mw.UID] = true
		w.collectOne(ch, mw, w.tally(mw.UID), now)
	}
	for uid := range w.byUID {
		if !live[uid] {
			delete(w.byUID, uid) // deleted: its series are gone with it
		}
	}
}

func (w *Workloads) collectOne(ch chan<- prometheus.Metric, mw *napwakev1alpha1.ManagedWorkload, t *workloadTally, now time.Time) {
	ns, name := mw.Namespace, mw.Name
	for _, p := range phasesInOrder {
		v := 0.0
		if mw.Status.Phase == p {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(workloadPhaseDesc, prometheus.GaugeValue, v, ns, name, string(p))
	}
	if t.lastWake > 0 {
		ch <- prometheus.MustNewConstMetric(workloadWakeDesc, prometheus.GaugeValue, t.lastWake.Seconds(), ns, name)
	}
	ch <- prometheus.MustNewConstMetric(workloadColdStartsDesc, prometheus.CounterValue, t.coldStarts, ns, name)
	ch <- prometheus.MustNewConstMetric(workloadTurnedAwayDesc, prometheus.CounterValue, t.turnedAwayTotal(mw.Status.TurnedAway), ns, name)
	t.saved = max(t.saved, savedSoFar(mw, now))
	ch <- prometheus.MustNewConstMetric(workloadSavedDesc, prometheus.CounterValue, t.saved, ns, name)
}

// turnedAway adds what status.turnedAway gained since the last scrape and
// returns the sum: a new pause's count adds whole, the same pause's only
// its growth. The first sight of a workload (the operator's start) takes
// its count as the baseline: a restarted operator must not count a past
// pause's requests again, which would look like a burst of them.
func (t *workloadTally) turnedAwayTotal(ta *napwakev1alpha1.TurnedAwayStatus) float64 {
	if ta != nil {
		switch {
		case !t.turnedAwayKnown:
			t.turnedAwayPause, t.turnedAwaySeen = ta.PausedAt.Time, ta.Requests
		case !ta.PausedAt.Time.Equal(t.turnedAwayPause):
			t.turnedAway += float64(ta.Requests)
			t.turnedAwayPause, t.turnedAwaySeen = ta.PausedAt.Time, ta.Requests
		case ta.Requests > t.turnedAwaySeen:
			t.turnedAway += float64(ta.Requests - t.turnedAwaySeen)
			t.turnedAwaySeen = ta.Requests
		}
	}
	t.turnedAwayKnown = true
	return t.turnedAway
}

// savedSoFar is status.savings (ended pauses, as kubectl napwake savings
// shows them) plus the pause under way: its replicas times its whole
// seconds so far, what the wake's write will add for it.
func savedSoFar(mw *napwakev1alpha1.ManagedWorkload, now time.Time) float64 {
	var v float64
	if s := mw.Status.Savings; s != nil {
		v = float64(s.PausedReplicaSeconds)
	}
	p := mw.Status.Pause
	if p == nil || (mw.Status.Phase != napwakev1alpha1.PhasePausing && mw.Status.Phase != napwakev1alpha1.PhasePaused) {
		return v
	}
	if d := now.Sub(p.StartedAt.Time); d > 0 {
		v += float64(p.Replicas) * float64(int64(d/time.Second))
	}
	return v
}
