package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// TestMetricsAreNamedAsDesigned holds the names and labels
// docs/design/components.md#metrics gives and the chart's dashboard and
// alerts read.
func TestMetricsAreNamedAsDesigned(t *testing.T) {
	m := New()
	for _, tc := range []struct {
		c    prometheus.Collector
		want string
	}{
		{m.Pauses, `fqName: "napwake_operator_pauses_total"`},
		{m.Pauses, `variableLabels: {reason}`},
		{m.Wakes, `variableLabels: {source}`},
		{m.Wakes, `fqName: "napwake_operator_wakes_total"`},
		{m.ResumeSeconds, `fqName: "napwake_operator_resume_duration_seconds"`},
		{m.WakeStepSeconds, `fqName: "napwake_operator_wake_step_seconds"`},
		{m.WakeStepSeconds, `variableLabels: {step}`},
		{m.RouteMoves, `fqName: "napwake_operator_route_moves_total"`},
		{m.RouteMoves, `variableLabels: {result}`},
		{m.RouteMoveSeconds, `fqName: "napwake_operator_route_move_seconds"`},
		{m.Forecast.ColdStartsPerson, `fqName: "napwake_forecast_cold_starts_person_total"`},
		{m.Forecast.Wakes, `fqName: "napwake_forecast_wakes_total"`},
		{m.Forecast.WakesUsed, `fqName: "napwake_forecast_wakes_used_total"`},
		{m.Forecast.WakesUsed, `variableLabels: {mode}`},
		{m.Forecast.ColdStartsAvoided, `fqName: "napwake_forecast_cold_starts_avoided_total"`},
		{m.Forecast.ColdStartsMissed, `fqName: "napwake_forecast_cold_starts_missed_total"`},
		{m.Forecast.EarlyPauses, `fqName: "napwake_forecast_early_pauses_total"`},
		{m.Forecast.EarlyPauseRegrets, `fqName: "napwake_forecast_early_pause_regrets_total"`},
		{m.Forecast.AwakeSeconds, `fqName: "napwake_forecast_awake_seconds_total"`},
		{m.Forecast.AwakeSeconds, `variableLabels: {reason}`},
	} {
		ch := make(chan *prometheus.Desc, 4)
		tc.c.Describe(ch)
		close(ch)
		d := <-ch
		if d == nil || !strings.Contains(d.String(), tc.want) {
			t.Errorf("metric %v, want %s", d, tc.want)
		}
	}
}

func TestForecastAddCountsWhatTheFiguresGained(t *testing.T) {
	m := New()
	before := napwakev1alpha1.ForecastFigures{ForecastWakes: 2, AwakeSeconds: map[string]int64{"request": 60}}
	after := napwakev1alpha1.ForecastFigures{ForecastWakes: 5, ForecastWakesUsed: 1, AwakeSeconds: map[string]int64{"request": 90, "hold": 30}}
	m.Forecast.Add(napwakev1alpha1.ForecastObserve, before, after)
	for _, tc := range []struct {
		c    prometheus.Counter
		want float64
	}{
		{m.Forecast.Wakes.WithLabelValues("Observe"), 3},
		{m.Forecast.WakesUsed.WithLabelValues("Observe"), 1},
		{m.Forecast.AwakeSeconds.WithLabelValues("request"), 30},
		{m.Forecast.AwakeSeconds.WithLabelValues("hold"), 30},
		{m.Forecast.Wakes.WithLabelValues("Act"), 0},
	} {
		if got := testutil.ToFloat64(tc.c); got != tc.want {
			t.Errorf("%v = %v, want %v", tc.c.Desc(), got, tc.want)
		}
	}
}

// TestEveryMetricPassesPromlint runs Prometheus' own linter over
// everything the operator registers, per-workload series included (one
// ManagedWorkload in the cache, one wake recorded), so a name without its
// unit or _total, or a counter named like a gauge, fails here.
func TestEveryMetricPassesPromlint(t *testing.T) {
	f := newSavedFixture(t, pausedMW("api", napwakev1alpha1.PhasePaused, 2))
	reg := prometheus.NewRegistry()
	m := New()
	if err := m.Register(reg, f.c, f.clock); err != nil {
		t.Fatal(err)
	}
	mw := pausedMW("api", napwakev1alpha1.PhasePaused, 2)
	m.RecordPause(napwakev1alpha1.PauseIdle)
	m.RecordWake(napwakev1alpha1.SourceRequest, PauseOf(mw), 2, time.Minute)
	m.RecordResumed(mw.UID, 30*time.Second)
	m.RouteMoves.WithLabelValues("ok").Inc()
	m.RouteMoveSeconds.Observe(1)
	m.Forecast.Add(napwakev1alpha1.ForecastAct, napwakev1alpha1.ForecastFigures{}, napwakev1alpha1.ForecastFigures{ForecastWakes: 1, AwakeSeconds: map[string]int64{"hold": 1}})
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if n, _ := testutil.GatherAndCount(reg, "napwake_operator_workload_last_wake_duration_seconds"); n != 1 {
		t.Errorf("per-workload series were not linted: %d last-wake series, want 1", n)
	}
	if n, _ := testutil.GatherAndCount(reg, "napwake_build_info"); n != 1 {
		t.Errorf("napwake_build_info: %d series, want 1", n)
	}
}

func TestRecordWakeStepsObservesEachStepOnceAWake(t *testing.T) {
	m := New()
	w := &napwakev1alpha1.LastWakeStatus{Source: "request", TotalMilliseconds: 5300, Steps: []napwakev1alpha1.WakeStep{
		{Name: napwakev1alpha1.WakeStepWoken, Milliseconds: 40}, {Name: napwakev1alpha1.WakeStepScaled, Milliseconds: 60},
		{Name: napwakev1alpha1.WakeStepReady, Milliseconds: 3000}, {Name: napwakev1alpha1.WakeStepRunning, Milliseconds: 2200},
	}}
	m.RecordWakeSteps(w)
	m.RecordWakeSteps(&napwakev1alpha1.LastWakeStatus{Source: "request"}) // under way: nothing
	m.RecordWakeSteps(nil)
	if n := testutil.CollectAndCount(m.WakeStepSeconds); n != 4 {
		t.Errorf("%d step series, want 4", n)
	}
	for _, s := range w.Steps {
		var got dto.Metric
		if err := m.WakeStepSeconds.WithLabelValues(string(s.Name)).(prometheus.Metric).Write(&got); err != nil {
			t.Fatal(err)
		}
		if got := got.GetHistogram().GetSampleCount(); got != 1 {
			t.Errorf("step %s observed %d times, want 1", s.Name, got)
		}
	}
}
