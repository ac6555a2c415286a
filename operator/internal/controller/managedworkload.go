package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/metrics"
)

// IndexTargetRef indexes ManagedWorkloads by "<kind>/<name>" of their target.
const IndexTargetRef = "spec.targetRef"

// TargetRefKey is the IndexTargetRef value for a target.
func TargetRefKey(kind napwakev1alpha1.TargetKind, name string) string {
	return string(kind) + "/" + name
}

// maxStepsPerReconcile bounds one reconcile: a pause is at most a status
// write, a scale and a status write; a wake the same.
const maxStepsPerReconcile = 8

// ManagedWorkloadReconciler pauses and wakes the target of each
// ManagedWorkload. It asks package decide for one step at a time and takes it,
// so every write is made from persisted state: status.pause is persisted
// before anything is scaled, and a wake's phase before it scales back.
type ManagedWorkloadReconciler struct {
	// Client reads (the manager's cache) and writes.
	Client client.Client
	// APIReader reads around the cache: pods still left during a pause.
	APIReader client.Reader
	// Clock tells the time; tests inject a fake one.
	Clock clock.PassiveClock
	// Recorder emits events on ManagedWorkloads.
	Recorder events.EventRecorder
	// Router routes Services to the doorman while paused; NoopRouter when off.
	Router Router
	// Metrics counts pauses and wakes.
	Metrics *metrics.Metrics
	// Usage is the default activity signal; nil counts as unavailable.
	Usage Usage
	// Queries evaluates spec.activity.prometheus; nil when the operator has
	// no --prometheus-url.
	Queries Queries
	// DefaultIdleAfter applies when spec.idleAfter is unset.
	DefaultIdleAfter time.Duration
	// SyncPeriod bounds how long a reconcile may be put off when nothing
	// changes (idle clocks, the usage signal).
	SyncPeriod time.Duration

	superseded supersededVersions
	answers    queryAnswers
}

// staleCacheRecheck: an informer usually catches up within milliseconds.
const staleCacheRecheck = 50 * time.Millisecond

// supersededVersions remembers, per ManagedWorkload, the resourceVersion
// this reconciler's last write replaced: a cached object still at it is
// known to be stale.
type supersededVersions struct{ m sync.Map }

func (v *supersededVersions) set(key types.NamespacedName, rv string) { v.m.Store(key, rv) }

func (v *supersededVersions) is(key types.NamespacedName, rv string) bool {
	old, ok := v.m.Load(key)
	return ok && old.(string) == rv
}

var _ reconcile.Reconciler = (*ManagedWorkloadReconciler)(nil)

// SetupWithManager registers the reconciler and its watches: its
// ManagedWorkloads, and Deployments and StatefulSets mapped to the
// ManagedWorkloads targeting them.
func (r *ManagedWorkloadReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.APIReader == nil || r.Clock == nil || r.Recorder == nil || r.Router == nil || r.Metrics == nil {
		return errors.New("ManagedWorkloadReconciler needs Client, APIReader, Clock, Recorder, Router and Metrics")
	}
	if err := IndexManagedWorkloads(context.Background(), mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("managedworkload").
		For(&napwakev1alpha1.ManagedWorkload{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionPredicate{}))).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.mapTarget(napwakev1alpha1.KindDeployment))).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(r.mapTarget(napwakev1alpha1.KindStatefulSet))).
		Complete(r)
}

var indexed = struct {
	sync.Mutex
	m map[ctrl.Manager]bool
}{m: map[ctrl.Manager]bool{}}

// IndexManagedWorkloads adds the IndexTargetRef index, once per manager.
func IndexManagedWorkloads(ctx context.Context, mgr ctrl.Manager) error {
	indexed.Lock()
	defer indexed.Unlock()
	if indexed.m[mgr] {
		return nil
	}
	indexed.m[mgr] = true
	return mgr.GetFieldIndexer().IndexField(ctx, &napwakev1alpha1.ManagedWorkload{}, IndexTargetRef, func(o client.Object) []string {
		mw := o.(*napwakev1alpha1.ManagedWorkload)
		return []string{TargetRefKey(mw.Spec.TargetRef.Kind, mw.Spec.TargetRef.Name)}
	})
}

// deletionPredicate passes updates that mark an object deleted.
type deletionPredicate struct{ predicate.Funcs }

func (deletionPredicate) Update(e event.UpdateEvent) bool {
	return e.ObjectNew.GetDeletionTimestamp() != nil
}

func (r *ManagedWorkloadReconciler) mapTarget(kind napwakev1alpha1.TargetKind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list napwakev1alpha1.ManagedWorkloadList
		if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{IndexTargetRef: TargetRefKey(kind, o.GetName())}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing ManagedWorkloads for a target", "target", klog.KObj(o))
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return reqs
	}
}

// Reconcile moves one ManagedWorkload through its pause/wake cycle.
func (r *ManagedWorkloadReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mw := &napwakev1alpha1.ManagedWorkload{}
	if err := r.Client.Get(ctx, req.NamespacedName, mw); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("managedWorkload", klog.KObj(mw)))
	if r.superseded.is(req.NamespacedName, mw.ResourceVersion) {
		// The cache has not caught up with this reconciler's own last
		// write: deciding from it would only end in a conflict.
		return reconcile.Result{RequeueAfter: staleCacheRecheck}, nil
	}
	if !mw.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, mw)
	}
	if !controllerutil.ContainsFinalizer(mw, napwakev1alpha1.Finalizer) {
		patch := client.MergeFromWithOptions(mw.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(mw, napwakev1alpha1.Finalizer)
		if err := r.Client.Patch(ctx, mw, patch); err != nil {
			return requeueOnConflict(fmt.Errorf("adding the finalizer to %s: %w", klog.KObj(mw), err))
		}
	}

	t, found, err := getTarget(ctx, r.Client, mw.Namespace, mw.Spec.TargetRef)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !found {
		return r.targetMissing(ctx, mw)
	}

	run := &run{r: r, mw: mw, t: t}
	return run.steps(ctx)
}

// run is one reconcile of one ManagedWorkload with a found target.
type run struct {
	r      *ManagedWorkloadReconciler
	mw     *napwakev1alpha1.ManagedWorkload
	t      target
	live   bool // t.replicas was read live, not from the cache
	routed bool
	// requeue is the soonest a router asked to be called again.
	requeue time.Duration
}

func (s *run) steps(ctx context.Context) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	r, mw := s.r, s.mw
	busy, usageOK := s.busy(ctx)
	queryActive, query := s.query(ctx)
	sig := signals{usage: usageOK, query: query}
	for range maxStepsPerReconcile {
		now := r.Clock.Now()
		in := decide.Input{
			Now: now, Created: mw.CreationTimestamp.Time, State: stateOf(mw), IdleAfter: s.idleAfter(),
			Annotations: decide.MergeAnnotations(mw.Annotations, s.t.annotations), Busy: busy, QueryActive: queryActive, Target: s.t.observed(),
		}
		if in.State.Phase == napwakev1alpha1.PhasePausing && in.Target.Replicas == 0 && in.Target.StatusReplicas == 0 {
			left, err := podsLeft(ctx, r.APIReader, mw.Namespace, s.t)
			if err != nil {
				return reconcile.Result{}, err
			}
			in.Target.PodsLeft = left
		}
		step := decide.Next(in)
		if !s.live && needsLive(step) {
			// What a pause saves and what a wake compares with must be
			// the workload's replicas now, not a cache's.
			n, err := liveReplicas(ctx, r.Client, &s.t)
			if err != nil {
				return reconcile.Result{}, err
			}
			s.t.replicas, s.live = n, true
			continue
		}
		switch step.Kind {
		case decide.Wait:
			if err := s.patchStatus(ctx, in.State, sig); err != nil { // conditions, observedGeneration
				return requeueOnConflict(err)
			}
			s.routeIfPaused(ctx)
			return reconcile.Result{RequeueAfter: s.after(step.RequeueAfter)}, nil
		case decide.PatchStatus:
			if step.Unroute {
				s.unroute(ctx)
			}
			if err := s.patchStatus(ctx, step.State, sig); err != nil {
				return requeueOnConflict(err)
			}
			s.record(step)
		case decide.Scale:
			if step.Replicas == 0 {
				s.route(ctx)
			}
			before, err := scaleTo(ctx, r.Client, &s.t, step.Replicas)
			if err != nil {
				return requeueOnConflict(err)
			}
			log.V(1).Info("Scaled target", "from", before, "to", step.Replicas)
			s.t.replicas, s.live = step.Replicas, true
		}
	}
	return reconcile.Result{RequeueAfter: time.Second}, nil
}

// needsLive says whether step would act on a replica count that must be
// live: the count a pause saves, and a scale-up seen as someone else's.
// Scaling reads the scale live anyway.
func needsLive(step decide.Step) bool {
	return step.Paused != "" || step.Woken == napwakev1alpha1.SourceScaled
}

func (s *run) idleAfter() time.Duration {
	if s.mw.Spec.IdleAfter != nil && s.mw.Spec.IdleAfter.Duration > 0 {
		return s.mw.Spec.IdleAfter.Duration
	}
	return s.r.DefaultIdleAfter
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

// condition says which activity signals a workload relies on: True when
// something beyond requests and annotations watches it (CPU usage, or its
// own Prometheus query).
func (sig signals) condition() (metav1.ConditionStatus, string, string) {
	base := "requests through the doorman, the activity and wake annotations"
	var with []string
	if sig.usage {
		with = append(with, "CPU usage from metrics.k8s.io")
	}
	if sig.query == queryOK {
		with = append(with, "its Prometheus activity query")
	}
	msg := "relies on " + base
	for i, w := range with {
		if i == len(with)-1 {
			msg += ", and " + w
		} else {
			msg += ", " + w
		}
	}
	switch sig.query {
	case queryFailing:
		msg += "; its Prometheus activity query is failing (see the operator's log)"
	case queryNoURL:
		msg += "; its Prometheus activity query is not evaluated: the operator has no --prometheus-url (Helm: operator.prometheusURL)"
	}
	if len(with) > 0 {
		return metav1.ConditionTrue, napwakev1alpha1.ReasonSignalsConfigured, msg
	}
	if !sig.usage {
		msg = "the cluster serves no metrics.k8s.io: " + strings.Replace(msg, "relies on ", "relies only on ", 1)
	}
	return metav1.ConditionFalse, napwakev1alpha1.ReasonUsageUnavailable, msg
}

// queryEvery is how often a workload's Prometheus activity query is
// evaluated: a paused queue worker wakes within this of its queue growing.
const queryEvery = 30 * time.Second

// queryState is what became of a workload's Prometheus activity query.
type queryState int

const (
	queryNone    queryState = iota // none configured
	queryOK                        // evaluated
	queryFailing                   // configured, the evaluation failed
	queryNoURL                     // configured, the operator has no --prometheus-url
)

// signals is what the ActivitySignals condition reports.
type signals struct {
	usage bool
	query queryState
}

// query evaluates spec.activity.prometheus, in every phase: its activity
// keeps a workload up and wakes a paused one. A failing query counts as no
// activity (logged; the condition says it is failing).
func (s *run) query(ctx context.Context) (active bool, state queryState) {
	a := s.mw.Spec.Activity
	if a == nil || a.Prometheus == nil || a.Prometheus.Query == "" {
		return false, queryNone
	}
	if s.r.Queries == nil {
		return false, queryNoURL
	}
	s.keepSoonest(queryEvery)
	now := s.r.Clock.Now()
	if ans, ok := s.r.answers.get(s.mw.UID, a.Prometheus.Query, now); ok {
		return ans.active, ans.state
	}
	active, err := s.r.Queries.Active(ctx, a.Prometheus.Query)
	state = queryOK
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Evaluating the Prometheus activity query; counting it as no activity", "query", a.Prometheus.Query)
		active, state = false, queryFailing
	}
	s.r.answers.put(s.mw.UID, queryAnswer{query: a.Prometheus.Query, at: now, active: active, state: state})
	return active, state
}

// queryReuse is how long a query's answer stands for its workload: the
// reconciles of one pause or wake (a few, each status write sets off the
// next) ask Prometheus once.
const queryReuse = 10 * time.Second

// queryAnswers remembers each workload's last answer, for queryReuse.
type queryAnswers struct {
	mu sync.Mutex
	m  map[types.UID]queryAnswer
}

type queryAnswer struct {
	query  string
	at     time.Time
	active bool
	state  queryState
}

func (q *queryAnswers) get(uid types.UID, query string, now time.Time) (queryAnswer, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	a, ok := q.m[uid]
	return a, ok && a.query == query && !now.Before(a.at) && now.Sub(a.at) < queryReuse
}

func (q *queryAnswers) put(uid types.UID, a queryAnswer) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = map[types.UID]queryAnswer{}
	}
	for k, old := range q.m { // forget workloads not asked about lately, deleted ones too
		if a.at.Sub(old.at) > 10*queryEvery {
			delete(q.m, k)
		}
	}
	q.m[uid] = a
}

func (s *run) after(d time.Duration) time.Duration {
	if d <= 0 || d > s.r.SyncPeriod {
		d = s.r.SyncPeriod
	}
	if s.requeue > 0 && s.requeue < d {
		d = s.requeue
	}
	return d
}

func (s *run) route(ctx context.Context) {
	if s.routed {
		return
	}
	s.routed = true
	after, err := s.r.Router.Route(ctx, s.mw, s.t.template)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Routing to the doorman; pausing anyway")
	}
	s.keepSoonest(after)
}

func (s *run) routeIfPaused(ctx context.Context) {
	if p := s.mw.Status.Phase; p == napwakev1alpha1.PhasePausing || p == napwakev1alpha1.PhasePaused {
		s.route(ctx)
	}
}

func (s *run) unroute(ctx context.Context) {
	after, err := s.r.Router.Unroute(ctx, s.mw)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Taking routes away; waking anyway")
	}
	s.keepSoonest(after)
}

func (s *run) keepSoonest(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}

// record emits the step's event and counts it.
func (s *run) record(step decide.Step) {
	m := s.r.Metrics
	if step.Paused != "" {
		m.RecordPause(step.Paused)
	}
	if step.Woken != "" {
		m.RecordWake(step.Woken, metrics.PauseOf(s.mw), decide.WantReplicas(s.mw.Status.Pause), step.PausedFor)
	}
	if step.ResumeTook > 0 {
		m.RecordResumed(step.ResumeTook)
	}
	if step.Event.Reason != "" {
		s.r.Recorder.Eventf(s.mw, nil, step.Event.Type, step.Event.Reason, step.Event.Reason, "%s", step.Event.Message)
	}
}

// patchStatus persists st, TargetAvailable=True, ActivitySignals and
// observedGeneration, when any differs. The patch is a merge patch of
// only those fields, guarded by resourceVersion: status.doorman, which the
// router writes, is never touched, and a concurrent write makes it fail
// with a conflict rather than be overwritten.
func (s *run) patchStatus(ctx context.Context, st decide.State, sig signals) error {
	mw := s.mw
	base := mw.DeepCopy()
	now := metav1.NewTime(s.r.Clock.Now())
	applyState(&mw.Status, st)
	mw.Status.ObservedGeneration = mw.Generation
	setCondition(&mw.Status.Conditions, mw.Generation, now, napwakev1alpha1.ConditionTargetAvailable, metav1.ConditionTrue,
		napwakev1alpha1.ReasonTargetFound, fmt.Sprintf("%s %s exists", mw.Spec.TargetRef.Kind, mw.Spec.TargetRef.Name))
	status, reason, msg := sig.condition()
	setCondition(&mw.Status.Conditions, mw.Generation, now, napwakev1alpha1.ConditionActivitySignals, status, reason, msg)
	if equalStatus(base, mw) {
		return nil
	}
	if err := s.r.Client.Status().Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		*mw = *base
		return fmt.Errorf("patching the status of %s: %w", klog.KObj(mw), err)
	}
	s.r.superseded.set(client.ObjectKeyFromObject(mw), base.ResourceVersion)
	return nil
}

func equalStatus(a, b *napwakev1alpha1.ManagedWorkload) bool {
	return stateOf(a).Equal(stateOf(b)) && a.Status.ObservedGeneration == b.Status.ObservedGeneration &&
		conditionsEqual(a.Status.Conditions, b.Status.Conditions)
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

func setCondition(conds *[]metav1.Condition, gen int64, now metav1.Time, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: now})
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

// targetMissing sets TargetAvailable=False TargetNotFound and takes routes
// away: no Service should lead to the doorman for a workload that is gone.
// When the target comes back its watch brings the ManagedWorkload here
// again; a paused one found scaled up wakes as "scaled", one still at zero
// stays paused.
func (r *ManagedWorkloadReconciler) targetMissing(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) (reconcile.Result, error) {
	if c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionTargetAvailable); c != nil && c.Status == metav1.ConditionFalse {
		return reconcile.Result{}, nil
	}
	if _, err := r.Router.Unroute(ctx, mw); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Taking routes away from a workload that is gone")
	}
	base := mw.DeepCopy()
	msg := fmt.Sprintf("%s %s does not exist", mw.Spec.TargetRef.Kind, mw.Spec.TargetRef.Name)
	setCondition(&mw.Status.Conditions, mw.Generation, metav1.NewTime(r.Clock.Now()), napwakev1alpha1.ConditionTargetAvailable,
		metav1.ConditionFalse, napwakev1alpha1.ReasonTargetNotFound, msg)
	mw.Status.ObservedGeneration = mw.Generation
	if err := r.Client.Status().Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return requeueOnConflict(fmt.Errorf("patching the status of %s: %w", klog.KObj(mw), err))
	}
	r.Recorder.Eventf(mw, nil, corev1.EventTypeWarning, napwakev1alpha1.EventTargetNotFound, napwakev1alpha1.EventTargetNotFound, "%s", msg)
	return reconcile.Result{}, nil
}

// finalize restores a paused target's replicas, lets the router clean up,
// then lets the ManagedWorkload go.
func (r *ManagedWorkloadReconciler) finalize(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(mw, napwakev1alpha1.Finalizer) {
		return reconcile.Result{}, nil
	}
	t, found, err := getTarget(ctx, r.Client, mw.Namespace, mw.Spec.TargetRef)
	if err != nil {
		return reconcile.Result{}, err
	}
	if found {
		n, err := liveReplicas(ctx, r.Client, &t)
		if err != nil {
			return reconcile.Result{}, err
		}
		t.replicas = n
		if want, needed := decide.Restore(stateOf(mw), t.observed()); needed {
			if _, err := scaleTo(ctx, r.Client, &t, want); err != nil {
				return requeueOnConflict(err)
			}
			r.Recorder.Eventf(mw, nil, corev1.EventTypeNormal, napwakev1alpha1.EventWaking, napwakev1alpha1.EventWaking,
				"Waking, the ManagedWorkload is being deleted: restoring %d replicas", want)
			r.Metrics.RecordWake(metrics.WokenByDeletion, metrics.PauseOf(mw), want, 0)
		}
	}
	done, after, err := r.Router.Finalize(ctx, mw)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Finalizing routes")
	}
	if !done {
		if after <= 0 {
			after = 5 * time.Second
		}
		return reconcile.Result{RequeueAfter: after}, nil
	}
	patch := client.MergeFromWithOptions(mw.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(mw, napwakev1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, mw, patch); err != nil {
		return requeueOnConflict(client.IgnoreNotFound(err))
	}
	return reconcile.Result{}, nil
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
