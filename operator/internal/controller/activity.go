package controller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
)

// queryEvery is how often a workload's Prometheus activity query is
// evaluated: a paused queue worker wakes within this of its queue growing.
const queryEvery = 30 * time.Second

// signals reads the activity signals of one reconcile: the default usage
// signal and the Prometheus activity query, each once. What decide.Next
// weighs is busy and queryActive; sig is what the ActivitySignals condition
// reports.
func (s *run) signals(ctx context.Context) (busy, queryActive bool, sig decide.Signals) {
	busy, sig.Usage = s.busy(ctx)
	queryActive, sig.Query = s.query(ctx)
	return busy, queryActive, sig
}

// busy asks the usage signal about a Running workload.
func (s *run) busy(ctx context.Context) (busy, available bool) {
	if s.r.Usage == nil || !s.r.Usage.Available(ctx) {
		return false, false
	}
	if s.mw.Status.Phase != napwakev1alpha1.PhaseRunning {
		return false, true
	}
	b, err := s.r.Usage.Busy(ctx, s.mw.Namespace, s.t.selector)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the usage signal; counting the workload as not busy")
		return false, true
	}
	return b, true
}

// query evaluates spec.activity.prometheus, in every phase: its activity
// keeps a workload up and wakes a paused one. A failing query counts as no
// activity (logged; the condition says it is failing). Queries answers from
// its cache within promquery.Reuse, so the reconciles of one pause or wake
// ask Prometheus once.
func (s *run) query(ctx context.Context) (active bool, state decide.QueryState) {
	a := s.mw.Spec.Activity
	if a == nil || a.Prometheus == nil || a.Prometheus.Query == "" {
		return false, decide.QueryNone
	}
	if s.r.Queries == nil {
		return false, decide.QueryNoURL
	}
	s.keepSoonest(queryEvery)
	active, err := s.r.Queries.Active(ctx, a.Prometheus.Query)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Evaluating the Prometheus activity query; counting it as no activity", "query", a.Prometheus.Query)
		return false, decide.QueryFailing
	}
	return active, decide.QueryOK
}
