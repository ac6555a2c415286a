package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/deps"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/operator/internal/quiesce"
	"napwake.dev/operator/internal/timeline"
	"napwake.dev/operator/internal/workload"
)

// maxStepsPerReconcile bounds one reconcile: a pause is at most a live
// read, a status write, a route, a scale and a wait; a wake a live read, a
// status write, a scale, a live count of the Ready pods, an unroute, a
// status write and a wait.
const maxStepsPerReconcile = 9

// ManagedWorkloadReconciler pauses and wakes the target of each
// ManagedWorkload. It asks package decide for one step at a time and takes it,
// so every write is made from persisted state: status.pause is persisted
// before anything is routed or scaled, and a wake's phase before it scales
// back.
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
	// Graph is the dependency graph (package deps), fed from the
	// ManagedWorkload and Namespace informers; nil makes one on first use.
	Graph *deps.Graph
	// KEDA finds the ScaledObjects that scale a target, which a pause
	// holds at 0; nil (the default, --keda=false) leaves them alone.
	KEDA *KEDA
	// SuspendCronJobs suspends the CronJobs of an opted-in namespace while
	// every workload there is paused (--suspend-cronjobs).
	SuspendCronJobs bool
	// TargetKinds are the kinds beyond apps/v1 Deployment and StatefulSet
	// that may be paused through their scale subresource (--target-kinds):
	// the ones served when the manager starts are watched, the others once
	// served (lateKinds); a target of a kind not given or not served gets
	// TargetAvailable False TargetNotScalable.
	TargetKinds []schema.GroupVersionKind
	// KindRecheck is how often the TargetKinds not served when the manager
	// started are looked for again, to be watched once served; zero is
	// DefaultKindRecheck.
	KindRecheck time.Duration
	// KindServed, when set, is called once for each of TargetKinds the
	// API server serves only after the manager started, once its watch is
	// up: the manager sets up the kind's label opt-in there.
	KindServed func(schema.GroupVersionKind) error

	superseded supersededVersions
	// autoscalerNotes are the changes of autoscalers seen by the watch,
	// for the next reconcile of their workloads (autoscalers.go).
	autoscalerNotes autoscalerNotes
	graphOnce       sync.Once
	// taught remembers the last last-request-from each workload learned
	// from (deps.Key → string), so a reconcile looks it up once.
	taught sync.Map
	// warned remembers the InvalidSetting warnings given (key and kind →
	// message), so each is given once (warnings.go).
	warned sync.Map
	// wakeScales remembers when each wake's scale was written (wake.go).
	wakeScales wakeScales
}

var _ reconcile.Reconciler = (*ManagedWorkloadReconciler)(nil)

// SetupWithManager registers the reconciler and its watches: its
// ManagedWorkloads, and Deployments and StatefulSets mapped to the
// ManagedWorkloads targeting them through the IndexTargetRef index, which
// the manager adds first (IndexManagedWorkloads, IndexPods). Every
// ManagedWorkload event (status too) and every Namespace event also feeds
// the dependency graph, which enqueues the workloads a change moves.
func (r *ManagedWorkloadReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.APIReader == nil || r.Clock == nil || r.Recorder == nil || r.Router == nil || r.Metrics == nil {
		return errors.New("ManagedWorkloadReconciler needs Client, APIReader, Clock, Recorder, Router and Metrics")
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("managedworkload").
		For(&napwakev1alpha1.ManagedWorkload{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionPredicate{}))).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.mapTarget(appsv1.SchemeGroupVersion.WithKind(string(napwakev1alpha1.KindDeployment))))).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(r.mapTarget(appsv1.SchemeGroupVersion.WithKind(string(napwakev1alpha1.KindStatefulSet))))).
		Watches(&napwakev1alpha1.ManagedWorkload{}, r.graphHandler()).
		Watches(&corev1.Namespace{}, r.namespaceHandler()).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, r.autoscalerHandler(r.hpaKind()), builder.WithPredicates(specChanged))
	if r.KEDA != nil && r.KEDA.Installed() {
		// Without KEDA's CRD at start there is nothing to watch: a watch of
		// a kind the API server does not serve would fail the manager. A
		// CRD installed later is found within kedaRecheck, and edits to
		// its ScaledObjects are then put right at the next sync period.
		so := &unstructured.Unstructured{}
		so.SetGroupVersionKind(ScaledObjectGVK)
		b = b.Watches(so, r.autoscalerHandler(r.scaledObjectKind()), builder.WithPredicates(predicate.Or(
			predicate.AnnotationChangedPredicate{}, predicate.GenerationChangedPredicate{}))) // not KEDA's status writes
	}
	var late []schema.GroupVersionKind
	for _, gvk := range r.TargetKinds {
		// Only a kind served now can be watched (a watch of one the API
		// server does not serve would fail the manager); the others are
		// watched once served (lateKinds), their targets refused
		// TargetNotScalable until then.
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			mgr.GetLogger().Info("Not watching yet a --target-kinds kind the API server does not serve", "kind", gvk.String(), "reason", err.Error())
			late = append(late, gvk)
			continue
		}
		b = b.Watches(watchable(gvk), handler.EnqueueRequestsFromMapFunc(r.mapTarget(gvk)))
	}
	c, err := b.Build(r)
	if err != nil || len(late) == 0 {
		return err
	}
	every := r.KindRecheck
	if every <= 0 {
		every = DefaultKindRecheck
	}
	return mgr.Add(&lateKinds{mapper: mgr.GetRESTMapper(), every: every, pending: late, watch: func(gvk schema.GroupVersionKind) error {
		if err := c.Watch(source.Kind(mgr.GetCache(), watchable(gvk), handler.EnqueueRequestsFromMapFunc(r.mapTarget(gvk)))); err != nil {
			return err
		}
		if r.KindServed != nil {
			if err := r.KindServed(gvk); err != nil {
				// Not tried again: the ManagedWorkloads' watch is up.
				mgr.GetLogger().Error(err, "Setting up what a --target-kinds kind now served needs", "kind", gvk.String())
			}
		}
		return nil
	}})
}

// watchable is an object of gvk to watch as metadata only: any change,
// its status's too (its controller's selector and ready replicas), brings
// the ManagedWorkload back, as a Deployment's does; what Napwake needs of
// it is read again in the reconcile.
func watchable(gvk schema.GroupVersionKind) client.Object {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(gvk)
	return o
}

// deletionPredicate passes updates that mark an object deleted.
type deletionPredicate struct{ predicate.Funcs }

func (deletionPredicate) Update(e event.UpdateEvent) bool {
	return e.ObjectNew.GetDeletionTimestamp() != nil
}

func (r *ManagedWorkloadReconciler) mapTarget(gvk schema.GroupVersionKind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list napwakev1alpha1.ManagedWorkloadList
		if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{IndexTargetRef: TargetRefKeyOf(gvk, o.GetName())}); err != nil {
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
		if apierrors.IsNotFound(err) {
			r.graph().Delete(req.NamespacedName, r.Clock.Now())
			r.taught.Delete(req.NamespacedName)
			r.superseded.forget(req.NamespacedName)
			r.forgetWarnings(req.NamespacedName)
			r.wakeScales.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("managedWorkload", klog.KObj(mw)))
	if r.superseded.is(req.NamespacedName, mw.ResourceVersion) {
		// The cache has not caught up with this reconcile's last writes:
		// deciding from it would only end in a conflict.
		return reconcile.Result{RequeueAfter: staleCacheRecheck}, nil
	}
	r.updateGraph(mw)
	if !mw.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, mw)
	}
	s := &reconcileScope{mw: mw}
	defer r.keepSuperseded(s)
	// The phases gather what decide.Input needs, in this order; the first
	// that stops (with a result or an error) ends the reconcile. Then
	// takeSteps asks decide for one step at a time and takes it.
	phases := []phase{
		{"learnCallerEdge", r.learnCallerEdge},
		{"reportAutoscalerChanges", r.reportAutoscalerChanges},
		{"addFinalizer", r.addFinalizer},
		{"readTarget", r.readTarget},
		{"gatherActivity", r.gatherActivity},
		{"gatherDependents", r.gatherDependents},
		{"gatherSchedule", r.gatherSchedule},
		{"gatherForecast", r.gatherForecast},
	}
	for _, p := range phases {
		res, err := p.run(ctx, s)
		if err != nil {
			return ptr.Deref(res, reconcile.Result{}), fmt.Errorf("reconcile phase %s: %w", p.name, err)
		}
		if res != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("A reconcile phase ended the reconcile", "phase", p.name)
			return *res, nil
		}
	}
	return r.takeSteps(ctx, s)
}

// phase is one named step of Reconcile before the decide loop: it reads
// or writes what it must and fills the scope. It returns a result to end
// the reconcile there, an error to end it with that error (wrapped with the
// phase's name), or neither to go on to the next phase.
type phase struct {
	name string
	run  func(ctx context.Context, s *reconcileScope) (*reconcile.Result, error)
}

// stop ends the reconcile with res and err.
func stop(res reconcile.Result, err error) (*reconcile.Result, error) { return &res, err }

// addFinalizer adds the finalizer, so a deletion restores the replicas.
func (r *ManagedWorkloadReconciler) addFinalizer(ctx context.Context, s *reconcileScope) (*reconcile.Result, error) {
	mw := s.mw
	if controllerutil.ContainsFinalizer(mw, napwakev1alpha1.Finalizer) {
		return nil, nil
	}
	base := mw.DeepCopy()
	controllerutil.AddFinalizer(mw, napwakev1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return stop(requeueOnConflict(fmt.Errorf("adding the finalizer to %s: %w", klog.KObj(mw), err)))
	}
	s.replaced(base.ResourceVersion)
	return nil, nil
}

// readTarget reads the target into s.t; a target gone or that cannot be
// paused ends the reconcile with TargetAvailable False (delete.go).
func (r *ManagedWorkloadReconciler) readTarget(ctx context.Context, s *reconcileScope) (*reconcile.Result, error) {
	mw := s.mw
	t, found, err := getTarget(ctx, r.Client, r.TargetKinds, mw.Namespace, mw.Spec.TargetRef)
	if ns := (*workload.NotScalableError)(nil); errors.As(err, &ns) {
		return stop(r.targetNotScalable(ctx, mw, ns.Why))
	}
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	if !found {
		return stop(r.targetMissing(ctx, mw))
	}
	s.t = t
	return nil, nil
}

// gatherActivity reads the activity signals once (activity.go).
func (r *ManagedWorkloadReconciler) gatherActivity(ctx context.Context, s *reconcileScope) (*reconcile.Result, error) {
	s.busy, s.queryActive, s.sig = r.signals(ctx, s)
	return nil, nil
}

// gatherDependents works out what the dependents say (dependencies.go).
func (r *ManagedWorkloadReconciler) gatherDependents(_ context.Context, s *reconcileScope) (*reconcile.Result, error) {
	s.dependents = r.dependents(s, r.Clock.Now())
	return nil, nil
}

// gatherSchedule reads spec.schedule and the overrides from the acting
// annotations, and warns once of what cannot be read (schedule.go).
func (r *ManagedWorkloadReconciler) gatherSchedule(_ context.Context, s *reconcileScope) (*reconcile.Result, error) {
	s.acting = decide.MergeAnnotations(s.mw.Annotations, s.t.annotations)
	s.sched = readSchedule(s.mw, s.acting)
	r.warnSchedule(s)
	return nil, nil
}

// gatherForecast loads the forecast and teaches it this reconcile's
// person-caused activity (forecast.go).
func (r *ManagedWorkloadReconciler) gatherForecast(ctx context.Context, s *reconcileScope) (*reconcile.Result, error) {
	r.loadForecast(ctx, s, r.Clock.Now())
	r.teachForecastPeople(s, r.Clock.Now(), s.acting, s.busy, s.queryActive)
	return nil, nil
}

// takeSteps asks decide.Next for a step and takes it, until it says Wait.
func (r *ManagedWorkloadReconciler) takeSteps(ctx context.Context, s *reconcileScope) (reconcile.Result, error) {
	mw := s.mw
	for range maxStepsPerReconcile {
		in := decide.Input{
			Now: r.Clock.Now(), Created: mw.CreationTimestamp.Time, State: stateOf(mw), IdleAfter: r.idleAfter(s),
			Annotations: s.acting, Busy: s.busy, QueryActive: s.queryActive, Target: s.t.observed(),
			Routed: s.routed, Unrouted: s.unrouted, RoutesLeft: routesLeft(mw), RouteComing: s.routed && routeComing(mw),
			Dependents: s.dependents, Schedule: s.sched.in,
		}
		if in.State.Phase == napwakev1alpha1.PhasePausing && in.Target.Replicas == 0 && in.Target.StatusReplicas == 0 {
			left, err := podsLeft(ctx, r.APIReader, mw.Namespace, s.t)
			if err != nil {
				return reconcile.Result{}, err
			}
			in.Target.PodsLeft = left
		}
		in.Forecast = r.forecastInput(s, in)
		step := decide.Next(in)
		if !s.live && needsLive(in, step) {
			// What a pause saves and what a wake compares with must be
			// the workload's replicas now, not a cache's.
			n, err := liveReplicas(ctx, r.Client, &s.t)
			if err != nil {
				return reconcile.Result{}, err
			}
			s.t.replicas, s.live = n, true
			continue
		}
		if step.Kind == decide.Unroute && !s.readyLive {
			// Running is taken from the pods as they are now: the
			// target's status may still count a pod the pause deleted
			// and that is Ready in its preStop, and a cache may be
			// behind it (docs/design/pause-wake.md#a-wake-step-by-step).
			n, err := workload.ReadyPods(ctx, r.APIReader, mw.Namespace, s.t.selector)
			if err != nil {
				return reconcile.Result{}, fmt.Errorf("listing the Ready pods of %s: %w", client.ObjectKeyFromObject(s.t.obj), err)
			}
			s.t.readyReps, s.readyLive = n, true
			continue
		}
		switch step.Kind {
		case decide.Wait:
			r.quietAutoscalers(ctx, s, quiesce.IsPaused(in.State.Phase))
			r.quietCronJobs(ctx, s, &in.State.Phase)
			if err := r.patchStatus(ctx, s, in.State); err != nil { // conditions, observedGeneration
				return requeueOnConflict(err)
			}
			return reconcile.Result{RequeueAfter: r.after(s, step.RequeueAfter)}, nil
		case decide.PatchStatus:
			if step.Woken != "" {
				// The wake's write records what the ended pause saved, so
				// it counts once, whatever crashes after.
				s.saved = savedBy(mw.Status.Pause, step.PausedFor, in.Now)
				s.lastWake = wakeBegun(step, in.Now)
			}
			if step.ResumeTook > 0 {
				r.wakeDone(ctx, s, in.Now)
			}
			r.forecastStepped(s, in, step)
			if err := r.patchStatusAndScale(ctx, s, step); err != nil {
				return requeueOnConflict(err)
			}
			r.announceStep(s, step)
		case decide.Route:
			r.route(ctx, s)
		case decide.Unroute:
			r.unroute(ctx, s)
		case decide.Scale:
			if step.Replicas == 0 {
				// Hold the ScaledObjects first: KEDA must not scale back
				// what the pause scales down.
				r.quietAutoscalers(ctx, s, true)
			}
			before, err := scaleTo(ctx, r.Client, &s.t, step.Replicas)
			if err != nil {
				return requeueOnConflict(err)
			}
			r.scaled(ctx, s, before, step.Replicas, r.Clock.Now())
		}
	}
	return reconcile.Result{RequeueAfter: time.Second}, nil
}

// scaled follows a scale to replicas written at at, from before.
func (r *ManagedWorkloadReconciler) scaled(ctx context.Context, s *reconcileScope, before, replicas int32, at time.Time) {
	if replicas > 0 {
		// Release the ScaledObjects only after: the wake's count is the
		// one the pause saved, whatever paused-replicas said meanwhile.
		r.quietAutoscalers(ctx, s, false)
		r.scaledUp(s, at)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Scaled target", "from", before, "to", replicas)
	s.t.replicas, s.live = replicas, true
}

// patchStatusAndScale persists step.State and, for a wake that has one
// (decide.Step.ScaleAlong), writes its scale at the same time: a caller
// held at the doorman waits for the slower of the two writes rather than
// for both in a row. Either may fail alone; the next reconcile finishes
// the wake from what did land (docs/design/pause-wake.md#the-wakes-two-writes).
func (r *ManagedWorkloadReconciler) patchStatusAndScale(ctx context.Context, s *reconcileScope, step decide.Step) error {
	if step.ScaleAlong <= 0 {
		return r.patchStatus(ctx, s, step.State)
	}
	var (
		before   int32
		scaleErr error
		at       time.Time
	)
	// The scale works on its own copy of the target, object included: the
	// status write reads s.t meanwhile (its value methods copy it whole,
	// setGitOps reads the object's managed fields), and the client writes
	// the object's apiVersion and kind back after every request.
	t := s.t
	t.obj = s.t.obj.DeepCopyObject().(client.Object)
	done := make(chan struct{})
	go func() {
		defer close(done)
		before, scaleErr = scaleTo(ctx, r.Client, &t, step.ScaleAlong)
		at = r.Clock.Now()
	}()
	statusErr := r.patchStatus(ctx, s, step.State)
	<-done
	s.t.scale = t.scale
	if scaleErr == nil {
		r.scaled(ctx, s, before, step.ScaleAlong, at)
	}
	return errors.Join(statusErr, scaleErr)
}

// routesLeft says whether status.doorman still names routes.
func routesLeft(mw *napwakev1alpha1.ManagedWorkload) bool {
	return mw.Status.Doorman != nil && len(mw.Status.Doorman.Routes) > 0
}

// routeComing says the router left WakeOnRequest False ForwarderNotReady:
// every route waits for a NEG forwarder's Ready pod (decide.Input.RouteComing).
func routeComing(mw *napwakev1alpha1.ManagedWorkload) bool {
	c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == napwakev1alpha1.ReasonForwarderNotReady
}

// needsLive says whether step would act on a replica count that must be
// live: the count a pause saves, a scale-up seen as someone else's, and a
// wake that finds the replicas already there.
func needsLive(in decide.Input, step decide.Step) bool {
	switch {
	case step.Paused != "", step.Woken == napwakev1alpha1.SourceScaled:
		return true
	case step.Woken != "" && in.Target.Replicas >= decide.WantReplicas(in.State.Pause):
		// A wake that finds nothing to scale may be reading a cache
		// still behind the pause's own scale to 0.
		return true
	}
	return false
}

func (r *ManagedWorkloadReconciler) idleAfter(s *reconcileScope) time.Duration {
	if s.mw.Spec.IdleAfter != nil && s.mw.Spec.IdleAfter.Duration > 0 {
		return s.mw.Spec.IdleAfter.Duration
	}
	return r.DefaultIdleAfter
}

func (r *ManagedWorkloadReconciler) after(s *reconcileScope, d time.Duration) time.Duration {
	if d <= 0 || d > r.SyncPeriod {
		d = r.SyncPeriod
	}
	if s.requeue > 0 && s.requeue < d {
		d = s.requeue
	}
	return d
}

// route takes decide's Route step. The Router may patch status (see
// status.go), updating s.mw in place; a routing error never holds up the
// pause: the Router asks to be called again with its backoff.
func (r *ManagedWorkloadReconciler) route(ctx context.Context, s *reconcileScope) {
	s.routed = true
	rv := s.mw.ResourceVersion
	after, err := r.Router.Route(ctx, s.mw, s.t.template)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Routing to the doorman; pausing anyway, routing is tried again")
	}
	r.routerWrote(s, rv, after)
}

// unroute takes decide's Unroute step; an error never holds up the wake.
func (r *ManagedWorkloadReconciler) unroute(ctx context.Context, s *reconcileScope) {
	s.unrouted = true
	rv := s.mw.ResourceVersion
	after, err := r.Router.Unroute(ctx, s.mw)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Taking routes away; waking anyway")
	}
	r.routerWrote(s, rv, after)
}

// routerWrote notes a Router call that began at resourceVersion rv and
// asked to be called again after requeueAfter.
func (r *ManagedWorkloadReconciler) routerWrote(s *reconcileScope, rv string, requeueAfter time.Duration) {
	if s.mw.ResourceVersion != rv {
		s.replaced(rv)
	}
	s.keepSoonest(requeueAfter)
}

// keepSuperseded keeps the resourceVersions this reconcile replaced, so the next
// one knows a cache still at any of them is stale.
func (r *ManagedWorkloadReconciler) keepSuperseded(s *reconcileScope) {
	if len(s.superseded) > 0 {
		r.superseded.set(client.ObjectKeyFromObject(s.mw), s.superseded)
	}
}

// announceStep emits the step's event and counts it.
func (r *ManagedWorkloadReconciler) announceStep(s *reconcileScope, step decide.Step) {
	m := r.Metrics
	if step.Paused != "" {
		m.RecordPause(step.Paused)
	}
	if step.Woken != "" {
		m.RecordWake(step.Woken, metrics.PauseOf(s.mw), decide.WantReplicas(s.mw.Status.Pause), step.PausedFor)
	}
	if step.ResumeTook > 0 {
		m.RecordResumed(s.mw.UID, step.ResumeTook)
		m.RecordWakeSteps(s.mw.Status.LastWake)
		r.wakeScales.forget(client.ObjectKeyFromObject(s.mw))
	}
	if step.Event.Reason != "" {
		msg := step.Event.Message
		if sum := timeline.Summary(s.mw.Status.LastWake); step.ResumeTook > 0 && sum != "" {
			msg += ", " + sum // recent wakes' totals stay in describe's events
		}
		r.Recorder.Eventf(s.mw, nil, step.Event.Type, step.Event.Reason, step.Event.Reason, "%s", msg)
	}
}
