package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Forecast are the forecast's figures (status.forecast.figures, defined in
// docs/forecast.md), summed over workloads, by mode (Act or Observe: in
// Observe the wakes and early pauses are the ones it would have made).
// Awake time is by reason: the wake's activity source, or "hold".
type Forecast struct {
	ColdStartsPerson  *prometheus.CounterVec
	Wakes             *prometheus.CounterVec
	WakesUsed         *prometheus.CounterVec
	ColdStartsAvoided *prometheus.CounterVec
	ColdStartsMissed  *prometheus.CounterVec
	EarlyPauses       *prometheus.CounterVec
	EarlyPauseRegrets *prometheus.CounterVec
	AwakeSeconds      *prometheus.CounterVec
}

func newForecast() *Forecast {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "napwake_forecast_" + name, Help: help}, labels)
	}
	return &Forecast{
		ColdStartsPerson:  counter("cold_starts_person_total", "Person-caused activity that found a workload with a forecast paused or resuming, by mode.", "mode"),
		Wakes:             counter("wakes_total", "Forecast pre-wakes (in Observe mode: would-be ones), by mode.", "mode"),
		WakesUsed:         counter("wakes_used_total", "Forecast pre-wakes a person used before the next pause, by mode.", "mode"),
		ColdStartsAvoided: counter("cold_starts_avoided_total", "Person-caused activity while awake that idleness alone would have met paused, by mode.", "mode"),
		ColdStartsMissed:  counter("cold_starts_missed_total", "Cold starts people saw while autoResume was on and the forecast had learned a week, by mode.", "mode"),
		EarlyPauses:       counter("early_pauses_total", "Pauses made early by pauseEarly (in Observe mode: would-be ones), by mode.", "mode"),
		EarlyPauseRegrets: counter("early_pause_regrets_total", "Early pauses followed by a person while idleness alone would still have kept the workload awake, by mode.", "mode"),
		AwakeSeconds:      counter("awake_seconds_total", "Awake time of workloads with a forecast, by what woke them (an activity source) or hold.", "reason"),
	}
}

func (f *Forecast) collectors() []prometheus.Collector {
	return []prometheus.Collector{f.ColdStartsPerson, f.Wakes, f.WakesUsed, f.ColdStartsAvoided, f.ColdStartsMissed, f.EarlyPauses, f.EarlyPauseRegrets, f.AwakeSeconds}
}

// Add counts what one workload's figures gained from before to after.
func (f *Forecast) Add(mode napwakev1alpha1.ForecastMode, before, after napwakev1alpha1.ForecastFigures) {
	m := string(mode)
	for _, c := range []struct {
		v             *prometheus.CounterVec
		before, after int64
	}{
		{f.ColdStartsPerson, before.ColdStartsPerson, after.ColdStartsPerson},
		{f.Wakes, before.ForecastWakes, after.ForecastWakes},
		{f.WakesUsed, before.ForecastWakesUsed, after.ForecastWakesUsed},
		{f.ColdStartsAvoided, before.ColdStartsAvoided, after.ColdStartsAvoided},
		{f.ColdStartsMissed, before.ColdStartsMissed, after.ColdStartsMissed},
		{f.EarlyPauses, before.EarlyPauses, after.EarlyPauses},
		{f.EarlyPauseRegrets, before.EarlyPauseRegrets, after.EarlyPauseRegrets},
	} {
		if d := c.after - c.before; d > 0 {
			c.v.WithLabelValues(m).Add(float64(d))
		}
	}
	for reason, s := range after.AwakeSeconds {
		if d := s - before.AwakeSeconds[reason]; d > 0 {
			f.AwakeSeconds.WithLabelValues(reason).Add(float64(d))
		}
	}
}
