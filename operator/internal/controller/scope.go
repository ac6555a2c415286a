package controller

import (
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/deps"
	"napwake.dev/operator/internal/quiesce"
)

// reconcileScope is what one reconcile of one ManagedWorkload knows, as
// Cluster API's scopes are: data only. The gather phases of Reconcile
// (managedworkload.go) fill it, takeSteps builds decide.Input from it, and
// the status write (status.go) reads what it must persist from it. Its
// only methods keep the reconcile's bookkeeping: the soonest requeue and
// the resourceVersions replaced.
type reconcileScope struct {
	mw *napwakev1alpha1.ManagedWorkload
	// t is the target, once readTarget read it.
	t target
	// live is true once t.replicas was read live, not from the cache;
	// readyLive once t.readyReps was counted from the pods read live.
	live, readyLive bool

	// Gathered before the decide loop, by the phases named after them.

	// busy and queryActive are what decide weighs of the activity signals;
	// sig is what the ActivitySignals condition reports (gatherActivity).
	busy, queryActive bool
	sig               decide.Signals
	// dependents is what the workload's dependents say to its cycle, and
	// hold what holds it awake, as of this reconcile (gatherDependents).
	dependents decide.Dependents
	hold       deps.Hold
	// acting are the ManagedWorkload's annotations merged with its
	// target's (decide.MergeAnnotations); sched is spec.schedule and the
	// overrides read from them (gatherSchedule).
	acting map[string]string
	sched  scheduleRead
	// fc is the workload's forecast (forecast.go); nil without one
	// (gatherForecast).
	fc *forecastRun

	// Set while taking decide's steps.

	// routed and unrouted say the Router was asked in this reconcile.
	routed, unrouted bool
	// requeue is the soonest the Router or the query asked to be called again.
	requeue time.Duration
	// superseded are the resourceVersions this reconcile's writes replaced.
	superseded []string

	// For the next status write (patchStatus), then cleared.

	// usage is a newly learned status.usage.
	usage *napwakev1alpha1.UsageStatus
	// saved is what an ending pause saved, added to status.savings.
	saved *napwakev1alpha1.SavingsStatus
	// lastWake is status.lastWake: a wake's signal as it begins, its
	// timeline once Running (wake.go).
	lastWake *napwakev1alpha1.LastWakeStatus
	// autoscalers is the Autoscalers condition, once quietAutoscalers ran
	// with autoscalersPaused; nil before.
	autoscalers       *quiesce.Condition
	autoscalersPaused bool
	// cronJobs is the CronJobs condition, once quietCronJobs ran;
	// cronJobsOff says to drop it instead.
	cronJobs    *quiesce.Condition
	cronJobsOff bool
}

// replaced notes that a write replaced resourceVersion rv.
func (s *reconcileScope) replaced(rv string) { s.superseded = append(s.superseded, rv) }

// keepSoonest keeps d as the requeue if it is sooner than the one kept.
func (s *reconcileScope) keepSoonest(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}
