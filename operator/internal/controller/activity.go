package controller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/idlelevel"
)

// queryEvery is how often a workload's Prometheus activity query is
// evaluated: a paused queue worker wakes within this of its queue growing.
const queryEvery = 30 * time.Second

// signals reads the activity signals of one reconcile: the default usage
// signal and the Prometheus activity query, each once. What decide.Next
// weighs is busy and queryActive; sig is what the ActivitySignals condition
// reports.
func (r *ManagedWorkloadReconciler) signals(ctx context.Context, s *reconcileScope) (busy, queryActive bool, sig decide.Signals) {
	queryActive, sig.Query = r.query(ctx, s)
	busy, sig.Usage = r.busy(ctx, s, queryActive)
	return busy, queryActive, sig
}

// quietFor is how long no other activity signal must have fired for a
// usage sample to teach the idle level: a request's work, and the CPU a
// wake's start-up takes, are not what the workload uses when nobody calls.
const quietFor = 2 * time.Minute

// busy asks the usage signal about a Running workload: its busiest pod's
// CPU against the workload's own idle level. A sample taken while no other
// signal fired (queryActive counts) teaches the idle level; s.usage then
// holds the status.usage to write.
func (r *ManagedWorkloadReconciler) busy(ctx context.Context, s *reconcileScope, queryActive bool) (busy, available bool) {
	if r.Usage == nil || !r.Usage.Available(ctx) {
		return false, false
	}
	if s.mw.Status.Phase != napwakev1alpha1.PhaseRunning {
		return false, true
	}
	milli, pods, err := r.Usage.PeakMilliCPU(ctx, s.mw.Namespace, s.t.selector)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the usage signal; counting the workload as not busy")
		return false, true
	}
	if pods == 0 {
		return false, true
	}
	learned := idleLevelOf(s.mw.Status.Usage)
	busy = idlelevel.Busy(learned, milli)
	if !queryActive && r.quiet(s) {
		if next, changed := idlelevel.Observe(learned, r.Clock.Now(), milli); changed {
			s.usage = usageStatus(next)
		}
	}
	return busy, true
}

// quiet says no signal other than usage fired within quietFor.
func (r *ManagedWorkloadReconciler) quiet(s *reconcileScope) bool {
	st := s.mw.Status
	if st.LastActivity == nil || st.LastActivitySource == napwakev1alpha1.SourceUsage {
		return true
	}
	return r.Clock.Since(st.LastActivity.Time) >= quietFor
}

// idleLevelOf reads what status.usage has learned.
func idleLevelOf(u *napwakev1alpha1.UsageStatus) idlelevel.State {
	if u == nil || u.Hour == nil {
		return idlelevel.State{}
	}
	return idlelevel.State{Lows: u.HourlyLows, Hour: u.Hour.Time}
}

// usageStatus is status.usage for what has been learned.
func usageStatus(l idlelevel.State) *napwakev1alpha1.UsageStatus {
	level, _ := idlelevel.Level(l)
	return &napwakev1alpha1.UsageStatus{
		IdleMilliCPU: level, BusyAboveMilliCPU: idlelevel.BusyAbove(level),
		HourlyLows: l.Lows, Hour: timePtr(l.Hour),
	}
}

// query evaluates spec.activity.prometheus, in every phase: its activity
// keeps a workload up and wakes a paused one. A failing query counts as no
// activity (logged; the condition says it is failing). Queries answers from
// its cache within promquery.Reuse, so the reconciles of one pause or wake
// ask Prometheus once.
func (r *ManagedWorkloadReconciler) query(ctx context.Context, s *reconcileScope) (active bool, state decide.QueryState) {
	a := s.mw.Spec.Activity
	if a == nil || a.Prometheus == nil || a.Prometheus.Query == "" {
		return false, decide.QueryNone
	}
	if r.Queries == nil {
		return false, decide.QueryNoURL
	}
	s.keepSoonest(queryEvery)
	active, err := r.Queries.Active(ctx, a.Prometheus.Query)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Evaluating the Prometheus activity query; counting it as no activity", "query", a.Prometheus.Query)
		return false, decide.QueryFailing
	}
	return active, decide.QueryOK
}
