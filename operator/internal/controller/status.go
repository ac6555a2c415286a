package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/deps"
	"napwake.dev/operator/internal/gitops"
)

// The status of a ManagedWorkload has three writers, each owning its fields:
//
//   - this reconciler: phase, pause, lastActivity(Source), pauseAt,
//     resumedAt, lastWake, observedGeneration, dependencies (learned on the caller's
//     reconcile's behalf by the callee's, see learn.go), and the
//     TargetAvailable, ActivitySignals, GitOps, Dependencies, Schedule,
//     Autoscalers and CronJobs conditions (setConditions);
//   - the Router: status.doorman and the WakeOnRequest condition;
//   - the doorman: the napwake.dev/turned-away annotation, which this
//     reconciler copies into status.turnedAway (turnedaway.go).
//
// Every write is a merge patch guarded by the resourceVersion it was made
// from, so a write made from an older object fails with a conflict (then
// the reconcile is requeued and decides again) instead of overwriting.
// Within one reconcile the reconciler and the Router write one after the
// other, never at once: the Router is called as decide's Route and Unroute
// steps, between the reconciler's own writes (and by targetMissing and
// finalize before theirs), and it updates the same object in place,
// resourceVersion included, so the reconciler's next patch is made from
// what the Router wrote. A merge patch replaces a list
// whole, so a patch that changes a condition carries the others as they are
// at that resourceVersion, which changes none of them.

// patchStatus persists, when any differs, st, what the scope keeps for the
// next status write (usage, savings, lastWake, forecast), turnedAway,
// observedGeneration and the conditions (setConditions), as a merge patch
// of only those fields guarded by resourceVersion. The events and metrics
// that must follow the write come after it.
func (r *ManagedWorkloadReconciler) patchStatus(ctx context.Context, s *reconcileScope, st decide.State) error {
	mw := s.mw
	base := mw.DeepCopy()
	now := metav1.NewTime(r.Clock.Now())
	applyState(&mw.Status, st)
	if s.usage != nil {
		mw.Status.Usage = s.usage
	}
	if s.saved != nil {
		mw.Status.Savings = addSavings(mw.Status.Savings, s.saved)
	}
	if s.lastWake != nil {
		mw.Status.LastWake = s.lastWake
	}
	if s.fc != nil {
		mw.Status.Forecast = s.fc.status()
	}
	copyTurnedAway(mw)
	mw.Status.ObservedGeneration = mw.Generation
	gitOpsWarned, refusal := setConditions(r.graph(), s, now)
	if equalStatus(base, mw) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		*mw = *base
		return fmt.Errorf("patching the status of %s: %w", klog.KObj(mw), err)
	}
	s.replaced(base.ResourceVersion)
	s.usage, s.saved, s.lastWake = nil, nil, nil
	r.forecastPersisted(s, r.Metrics)
	if gitOpsWarned != "" {
		r.Recorder.Eventf(mw, s.t.obj, corev1.EventTypeWarning, napwakev1alpha1.EventReplicasManagedByGitOps,
			napwakev1alpha1.EventReplicasManagedByGitOps, "%s", gitOpsWarned)
	}
	r.updateGraph(mw)
	r.refused(s, refusal)
	return nil
}

// setConditions sets each condition this reconciler owns, each by its own
// function below, in this order (a condition new to the list goes last).
// It returns what the events after the write say: the GitOps condition's
// message when it has just turned False, and a newly refused dependency.
func setConditions(g *deps.Graph, s *reconcileScope, now metav1.Time) (gitOpsWarned, refusal string) {
	setTargetAvailable(s, now)
	setActivitySignals(s, now)
	gitOpsWarned = setGitOps(s, now)
	refusal = setDependencies(g, s, now)
	setSchedule(s, now)
	setAutoscalers(s, now)
	setCronJobs(s, now)
	return gitOpsWarned, refusal
}

// setTargetAvailable sets TargetAvailable True: the target was read (a
// target gone or not scalable never reaches the status write, delete.go).
func setTargetAvailable(s *reconcileScope, now metav1.Time) {
	mw := s.mw
	setCondition(&mw.Status.Conditions, mw.Generation, now, napwakev1alpha1.ConditionTargetAvailable, decide.Condition{
		Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonTargetFound,
		Message: targetFoundMessage(mw.Spec.TargetRef, s.t.templateNote),
	})
}

// setActivitySignals sets ActivitySignals from what gatherActivity read.
func setActivitySignals(s *reconcileScope, now metav1.Time) {
	mw := s.mw
	setCondition(&mw.Status.Conditions, mw.Generation, now, napwakev1alpha1.ConditionActivitySignals, decide.ActivitySignals(s.sig))
}

// setGitOps sets the GitOps condition from the target's managedFields. It
// returns the condition's message when it has just turned False, so the
// caller warns once, after the write that records it.
func setGitOps(s *reconcileScope, now metav1.Time) string {
	mw := s.mw
	if s.t.obj == nil {
		return ""
	}
	prev := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionGitOps)
	var was *metav1.Condition
	if prev != nil {
		c := *prev
		was = &c
	}
	tool, owned := gitops.ReplicasOwner(s.t.obj.GetManagedFields())
	c := gitops.Judge(tool, owned, mw.Status.Phase, was)
	setCondition(&mw.Status.Conditions, mw.Generation, now, napwakev1alpha1.ConditionGitOps,
		decide.Condition{Status: c.Status, Reason: c.Reason, Message: c.Message})
	if c.Status == metav1.ConditionFalse && (was == nil || was.Status != metav1.ConditionFalse) {
		return c.Message
	}
	return ""
}

// setDependencies sets the Dependencies condition, on a workload with
// edges, a hold or the condition already, and drops learned edges unseen
// for deps.LearnedTTL. It returns the refusal to report in an event, if the
// condition newly says one.
func setDependencies(g *deps.Graph, s *reconcileScope, now metav1.Time) (refusal string) {
	mw := s.mw
	key := deps.KeyOf(mw)
	if d := mw.Status.Dependencies; d != nil {
		if kept, changed := deps.Expire(d.Learned, now.Time); changed {
			mw.Status.Dependencies = &napwakev1alpha1.DependenciesStatus{Learned: kept}
		}
		if len(mw.Status.Dependencies.Learned) == 0 {
			mw.Status.Dependencies = nil
		}
	}
	edges := g.Resolve(key)
	old := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionDependencies)
	var hold deps.Hold
	if mw.Status.Phase == napwakev1alpha1.PhaseRunning {
		hold = s.hold // what holds a workload matters only while it could pause for idleness
	}
	if len(edges) == 0 && !hold.Held && old == nil {
		return ""
	}
	c := deps.Condition(edges, hold, mw.Generation, now.Time)
	setCondition(&mw.Status.Conditions, mw.Generation, now, napwakev1alpha1.ConditionDependencies,
		decide.Condition{Status: c.Status, Reason: c.Reason, Message: c.Message})
	if c.Status != metav1.ConditionFalse {
		return ""
	}
	refusal, _, _ = strings.Cut(c.Message, "; the others still wake")
	if old != nil && old.Status == metav1.ConditionFalse && old.Reason == c.Reason && strings.HasPrefix(old.Message, refusal) {
		return "" // said once already
	}
	return refusal
}

// setSchedule writes status.schedule and the Schedule condition (removed
// without a schedule) into mw's status, for setConditions.
func setSchedule(s *reconcileScope, now metav1.Time) {
	st := &s.mw.Status
	st.Schedule = decide.ScheduleStatus(s.sched.in, now.Time)
	if c := s.sched.condition; c != nil {
		setCondition(&st.Conditions, s.mw.Generation, now, napwakev1alpha1.ConditionSchedule, *c)
		return
	}
	meta.RemoveStatusCondition(&st.Conditions, napwakev1alpha1.ConditionSchedule)
}

// setAutoscalers sets the Autoscalers condition quietAutoscalers kept
// (quiesce.go), once it ran.
func setAutoscalers(s *reconcileScope, now metav1.Time) {
	mw := s.mw
	if c := s.autoscalers; c != nil {
		setCondition(&mw.Status.Conditions, mw.Generation, now, napwakev1alpha1.ConditionAutoscalers,
			decide.Condition{Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
}

// setCronJobs sets the CronJobs condition quietCronJobs kept (quiesce.go),
// once it ran, and drops it for a namespace no longer opted in.
func setCronJobs(s *reconcileScope, now metav1.Time) {
	mw := s.mw
	switch c := s.cronJobs; {
	case c != nil && s.cronJobsOff:
		meta.RemoveStatusCondition(&mw.Status.Conditions, napwakev1alpha1.ConditionCronJobs)
	case c != nil:
		setCondition(&mw.Status.Conditions, mw.Generation, now, napwakev1alpha1.ConditionCronJobs,
			decide.Condition{Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
}

// savedBy is what a pause that kept p's replicas for d saved, ending at now.
func savedBy(p *napwakev1alpha1.PauseStatus, d time.Duration, now time.Time) *napwakev1alpha1.SavingsStatus {
	if p == nil || d <= 0 {
		return nil
	}
	return &napwakev1alpha1.SavingsStatus{PausedReplicaSeconds: int64(p.Replicas) * int64(d/time.Second), Pauses: 1, Since: timePtr(now)}
}

// addSavings adds one ended pause's savings to the record so far.
func addSavings(so *napwakev1alpha1.SavingsStatus, add *napwakev1alpha1.SavingsStatus) *napwakev1alpha1.SavingsStatus {
	out := *add
	if so != nil {
		out.PausedReplicaSeconds += so.PausedReplicaSeconds
		out.Pauses += so.Pauses
		if so.Since != nil {
			out.Since = so.Since
		}
	}
	return &out
}

func equalStatus(a, b *napwakev1alpha1.ManagedWorkload) bool {
	return stateOf(a).Equal(stateOf(b)) && a.Status.ObservedGeneration == b.Status.ObservedGeneration &&
		turnedAwayEqual(a.Status.TurnedAway, b.Status.TurnedAway) &&
		conditionsEqual(a.Status.Conditions, b.Status.Conditions) && equality.Semantic.DeepEqual(a.Status.Usage, b.Status.Usage) &&
		equality.Semantic.DeepEqual(a.Status.Savings, b.Status.Savings) && equality.Semantic.DeepEqual(a.Status.Forecast, b.Status.Forecast) &&
		learnedEqual(a.Status.Dependencies, b.Status.Dependencies) && scheduleEqual(a, b)
}

func conditionsEqual(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

func setCondition(conds *[]metav1.Condition, gen int64, now metav1.Time, typ string, c decide.Condition) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: c.Status, Reason: c.Reason, Message: c.Message, ObservedGeneration: gen, LastTransitionTime: now,
	})
}

// stateOf reads the cycle's state from status.
func stateOf(mw *napwakev1alpha1.ManagedWorkload) decide.State {
	st := mw.Status
	out := decide.State{Phase: st.Phase, Pause: st.Pause, LastActivitySource: st.LastActivitySource}
	if st.LastActivity != nil {
		out.LastActivity = st.LastActivity.UTC()
	}
	if st.PauseAt != nil {
		out.PauseAt = st.PauseAt.UTC()
	}
	if st.ResumedAt != nil {
		out.ResumedAt = st.ResumedAt.UTC()
	}
	return out
}

// applyState writes the cycle's state into status.
func applyState(st *napwakev1alpha1.ManagedWorkloadStatus, s decide.State) {
	st.Phase, st.LastActivitySource = s.Phase, s.LastActivitySource
	if s.Pause != nil {
		p := *s.Pause
		st.Pause = &p
	} else {
		st.Pause = nil
	}
	st.LastActivity, st.PauseAt, st.ResumedAt = timePtr(s.LastActivity), timePtr(s.PauseAt), timePtr(s.ResumedAt)
}

func timePtr(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

// staleCacheRecheck: an informer usually catches up within milliseconds.
const staleCacheRecheck = 50 * time.Millisecond

// supersededVersions remembers, per ManagedWorkload, the resourceVersions
// the writes of its last reconcile replaced, the Router's included: a
// cached object at any of them is known to be stale.
type supersededVersions struct{ m sync.Map } // types.NamespacedName → []string

func (v *supersededVersions) set(key types.NamespacedName, rvs []string) { v.m.Store(key, rvs) }

// forget drops what is kept for a ManagedWorkload gone.
func (v *supersededVersions) forget(key types.NamespacedName) { v.m.Delete(key) }

func (v *supersededVersions) is(key types.NamespacedName, rv string) bool {
	old, ok := v.m.Load(key)
	return ok && slices.Contains(old.([]string), rv)
}

// conflictRetry: a conflict means a newer object exists; the cache has it
// within milliseconds.
const conflictRetry = 100 * time.Millisecond

// requeueOnConflict turns a 409 into a quiet requeue: the next reconcile
// reads the newer object and decides again. Other errors are returned.
func requeueOnConflict(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return reconcile.Result{}, err
}

// targetFoundMessage is TargetAvailable's message when the target is read:
// "Deployment api exists", and, for a kind without spec.template, why no
// pod template could be read (workload.NoTemplate).
func targetFoundMessage(ref napwakev1alpha1.TargetRef, templateNote string) string {
	msg := ref.QualifiedKind() + " " + ref.Name + " exists"
	if templateNote != "" {
		msg += "; " + templateNote
	}
	return msg
}
