package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// workloadSeries are the per-ManagedWorkload metrics (docs/metrics.md).
var workloadSeries = []string{
	"napwake_operator_workload_phase", "napwake_operator_workload_last_wake_duration_seconds",
	"napwake_operator_workload_cold_starts_total", "napwake_operator_workload_turned_away_requests_total",
	"napwake_operator_workload_paused_replica_seconds_total",
}

// wantWorkloadSeries scrapes the per-workload collector and compares its
// series with want, the exposition text of the values (without HELP and
// TYPE lines, which it adds).
func (f *fixture) wantWorkloadSeries(when, want string) {
	f.t.Helper()
	help := map[string]string{
		"napwake_operator_workload_phase":                        "# HELP napwake_operator_workload_phase 1 for the phase the ManagedWorkload is in, 0 for the others (none before its first reconcile).\n# TYPE napwake_operator_workload_phase gauge\n",
		"napwake_operator_workload_last_wake_duration_seconds":   "# HELP napwake_operator_workload_last_wake_duration_seconds Time from the ManagedWorkload's last wake to its first Ready pod; absent until a wake this operator saw ends.\n# TYPE napwake_operator_workload_last_wake_duration_seconds gauge\n",
		"napwake_operator_workload_cold_starts_total":            "# HELP napwake_operator_workload_cold_starts_total Wakes a person waited for: wakes by a request or a Wake it click (source request), pauses called off included.\n# TYPE napwake_operator_workload_cold_starts_total counter\n",
		"napwake_operator_workload_turned_away_requests_total":   "# HELP napwake_operator_workload_turned_away_requests_total Requests the doorman turned away while the ManagedWorkload was paused (what status.turnedAway gained since the operator started).\n# TYPE napwake_operator_workload_turned_away_requests_total counter\n",
		"napwake_operator_workload_paused_replica_seconds_total": "# HELP napwake_operator_workload_paused_replica_seconds_total Replica-seconds the ManagedWorkload's pauses saved: status.savings plus the pause under way so far.\n# TYPE napwake_operator_workload_paused_replica_seconds_total counter\n",
	}
	var text strings.Builder
	for _, name := range workloadSeries {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(want), "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, name+"{") {
				lines = append(lines, l)
			}
		}
		if len(lines) > 0 {
			text.WriteString(help[name] + strings.Join(lines, "\n") + "\n")
		}
	}
	if err := testutil.CollectAndCompare(f.metrics.Workloads, strings.NewReader(text.String()), workloadSeries...); err != nil {
		f.t.Fatalf("%s: %v", when, err)
	}
}

// TestEachWorkloadsSeriesFollowItsPauseAndWakeAndGoWithIt: after real
// reconciles against an API server, the per-workload series show the
// phase, the pause's savings so far, the doorman's turned-away count, the
// cold start a request caused and its wake's duration; once the
// ManagedWorkload is deleted, every one of its series is gone.
func TestEachWorkloadsSeriesFollowItsPauseAndWakeAndGoWithIt(t *testing.T) {
	f := newFixture(t, 2)
	f.runToRunning()
	series := func(phase napwakev1alpha1.Phase, rest string) string {
		var b strings.Builder
		for _, p := range []napwakev1alpha1.Phase{napwakev1alpha1.PhasePaused, napwakev1alpha1.PhasePausing, napwakev1alpha1.PhaseResuming, napwakev1alpha1.PhaseRunning} {
			v := 0
			if p == phase {
				v = 1
			}
			fmt.Fprintf(&b, "napwake_operator_workload_phase{name=\"api\",namespace=%q,phase=%q} %d\n", f.ns, p, v)
		}
		return b.String() + strings.ReplaceAll(rest, "NS", f.ns)
	}
	f.wantWorkloadSeries("running", series(napwakev1alpha1.PhaseRunning, `
		napwake_operator_workload_cold_starts_total{name="api",namespace="NS"} 0
		napwake_operator_workload_turned_away_requests_total{name="api",namespace="NS"} 0
		napwake_operator_workload_paused_replica_seconds_total{name="api",namespace="NS"} 0`))

	f.pauseIt()
	f.clock.Step(time.Hour)
	pausedAt := f.managedWorkload().Status.Pause.StartedAt.Time
	// The doorman turned 5 requests away; the reconcile copies its count.
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationTurnedAway, napwakev1alpha1.FormatTurnedAway(pausedAt, 5))
	f.reconcile()
	f.wantWorkloadSeries("an hour into the pause", series(napwakev1alpha1.PhasePaused, `
		napwake_operator_workload_cold_starts_total{name="api",namespace="NS"} 0
		napwake_operator_workload_turned_away_requests_total{name="api",namespace="NS"} 5
		napwake_operator_workload_paused_replica_seconds_total{name="api",namespace="NS"} 7200`))

	// A request wakes it: a cold start; Ready 40 s later.
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastRequest, f.stamp())
	f.reconcile()
	f.wantWorkloadSeries("resuming", series(napwakev1alpha1.PhaseResuming, `
		napwake_operator_workload_cold_starts_total{name="api",namespace="NS"} 1
		napwake_operator_workload_turned_away_requests_total{name="api",namespace="NS"} 5
		napwake_operator_workload_paused_replica_seconds_total{name="api",namespace="NS"} 7200`))
	f.clock.Step(40 * time.Second)
	f.followSpec()
	f.reconcile()
	f.wantWorkloadSeries("running again", series(napwakev1alpha1.PhaseRunning, `
		napwake_operator_workload_last_wake_duration_seconds{name="api",namespace="NS"} 40
		napwake_operator_workload_cold_starts_total{name="api",namespace="NS"} 1
		napwake_operator_workload_turned_away_requests_total{name="api",namespace="NS"} 5
		napwake_operator_workload_paused_replica_seconds_total{name="api",namespace="NS"} 7200`))

	// A wake by anything but a person is no cold start.
	f.pauseIt()
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
	f.reconcile()
	if got := f.managedWorkload().Status.Phase; got != napwakev1alpha1.PhaseResuming {
		t.Fatalf("phase %q after wake-requested, want Resuming", got)
	}
	f.wantWorkloadSeries("woken by wake-requested", series(napwakev1alpha1.PhaseResuming, `
		napwake_operator_workload_last_wake_duration_seconds{name="api",namespace="NS"} 40
		napwake_operator_workload_cold_starts_total{name="api",namespace="NS"} 1
		napwake_operator_workload_turned_away_requests_total{name="api",namespace="NS"} 5
		napwake_operator_workload_paused_replica_seconds_total{name="api",namespace="NS"} 7200`))

	must(t, k8s.Delete(f.ctx, f.managedWorkload()))
	f.reconcile()
	if n := testutil.CollectAndCount(f.metrics.Workloads); n != 0 {
		t.Fatalf("%d series left after the ManagedWorkload was deleted, want none", n)
	}
}

// TestNoWorkloadSeriesWhenTurnedOff: --per-workload-metrics=false leaves
// Workloads nil, and the reconciler records its wakes all the same.
func TestNoWorkloadSeriesWhenTurnedOff(t *testing.T) {
	f := newFixture(t, 2)
	f.metrics.Workloads = nil
	f.runToRunning()
	f.pauseIt()
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastRequest, f.stamp())
	f.reconcile()
	f.followSpec()
	f.reconcile()
	if got := testutil.ToFloat64(f.metrics.Wakes.WithLabelValues(napwakev1alpha1.SourceRequest)); got != 1 {
		t.Fatalf("wakes by request %v, want 1", got)
	}
}
