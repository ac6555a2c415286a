// Package decide is the operator's pause and wake logic, with no client and
// no clock: given what is persisted and observed now, Next returns the one
// step to take next. The reconciler takes that step, folds its result back in
// and asks again, so every write is made from persisted state and a crash
// between two writes leaves nothing the next step cannot finish. Routing is
// a step too: decide says when the doorman's routes are made and taken away,
// the reconciler only calls the router when told. ActivitySignals says what
// the ActivitySignals condition reports of the signals a workload relies on.
//
// The cycle is Running → Pausing → Paused → Resuming → Running
// (docs/design/pause-wake.md#the-cycle):
//
//   - Running: every activity signal moves lastActivity; pauseAt is
//     lastActivity + idleAfter. At pauseAt, or on a pause-requested newer
//     than the last pause and wake, status.pause is written with the target's
//     replicas and the phase becomes Pausing. Nothing is scaled in that step.
//   - Pausing: activity newer than the pause's start calls it off (Resuming).
//     Otherwise the Services are routed to the doorman, then the target is
//     scaled to 0, and once it has no pod left the phase is Paused. A live
//     replica count that is neither 0 nor the saved one means someone scaled
//     it mid-pause: that count is saved first, so it is the one a wake
//     restores.
//   - Paused: last-request, last-activity or wake-requested newer than the
//     pause's start, or the target scaled up by someone else (source
//     "scaled"), begin a wake: resumedAt and the phase Resuming are written.
//     Otherwise the routes are made afresh once a reconcile (Services and
//     doorman pods change while it sleeps), and it waits.
//   - Resuming: the target is scaled to the saved replicas (at least 1),
//     never down; once a pod is Ready, the routes go, then the phase is
//     Running. Routes still named in status while Running (their removal
//     failed, which never holds a wake up) go at the next reconcile.
//
// So a pause is: persist the pause → Route → Scale to 0 → Wait for the pods
// to go → persist Paused; and a wake: persist Resuming → Scale up → Wait for
// a Ready pod → Unroute → persist Running. A wake by an annotation
// (last-request, last-activity, wake-requested) makes its first two writes
// at once (Step.ScaleAlong).
// Route and Unroute are asked for once a reconcile (Input.Routed,
// Input.Unrouted): both are safe to repeat, so a crash after either only
// repeats it.
//
// Dependents (docs/design/dependencies.md#holding-awake) enter through Input.Dependents:
// a dependent's wake that reaches the workload wakes it while Paused or
// Pausing (source "dependent", the event naming who); a declared dependent
// that is awake holds a Running workload up (no idle pause, pauseAt
// cleared); and once released its idle clock counts from the release. The
// reconciler works these out with package deps.
//
// Schedules and overrides (docs/design/schedules-forecast.md#precedence) enter through
// Input.Schedule (schedule.go): keep-awake-until, then pause-until (which
// yields only to wake-requested), then a window of spec.schedule, come
// before the idle rules. Hooks here: the signal that wakes a Pausing or
// Paused workload, the pause an awake one takes first, pauseAt no earlier
// than a hold's end, and Wait coming back when a window or override
// changes. The forecast enters below them, just above idleness, through
// Input.Forecast (forecast.go): a pre-wake, a hold at the idle pause, an
// early pause.
//
// Times are compared at whole seconds, as the API stores them.
package decide

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/onewake"
)

// MaxClockSkew is how far in the future an annotation's time may be and still
// count: writers' clocks differ a little, but a far-future time would keep a
// workload awake for ever, so it is ignored.
const MaxClockSkew = onewake.MaxClockSkew

// State is the part of ManagedWorkload status the pause/wake cycle owns.
type State struct {
	Phase              napwakev1alpha1.Phase
	Pause              *napwakev1alpha1.PauseStatus
	LastActivity       time.Time
	LastActivitySource string
	PauseAt            time.Time // zero unless Running
	ResumedAt          time.Time
}

// Target is what was observed of the Deployment or StatefulSet.
type Target struct {
	// Found is false when it does not exist.
	Found bool
	// Replicas is spec.replicas, read live through the scale subresource.
	Replicas int32
	// StatusReplicas is status.replicas: pods the controller still counts.
	StatusReplicas int32
	// ReadyReplicas is status.readyReplicas; before an Unroute the
	// reconciler counts it again from the pods read live, Ready and not
	// terminating, since the status may still count a pod in its preStop.
	ReadyReplicas int32
	// PodsLeft is true while any pod matching the selector exists,
	// terminating ones included. Only consulted once Replicas and
	// StatusReplicas are 0.
	PodsLeft bool
}

// Input is everything Next looks at.
type Input struct {
	// Now is the current time.
	Now time.Time
	// Created is the ManagedWorkload's creationTimestamp: a pause-requested
	// older than it is left over from something else.
	Created time.Time
	// State is what is persisted.
	State State
	// IdleAfter is the effective idle time.
	IdleAfter time.Duration
	// Annotations are the acting annotations, from the ManagedWorkload and
	// the target merged (the later time of each wins; see MergeAnnotations).
	Annotations map[string]string
	// Busy is true when the default usage signal says the pods are working.
	Busy bool
	// QueryActive is true when spec.activity.prometheus's query returned a
	// value above zero just now; it counts in every phase, so it wakes a
	// paused workload (a queue worker whose queue grows).
	QueryActive bool
	// Target is the observed target.
	Target Target
	// Routed is true once the router was asked to route in this reconcile,
	// Unrouted once it was asked to take the routes away: each is asked for
	// at most once a reconcile. Neither is persisted: a new reconcile (after
	// a crash too) asks again, and the router makes the same routes.
	Routed, Unrouted bool
	// RoutesLeft is true while status.doorman still names routes: while
	// Running, they are left over from a wake whose route removal failed,
	// and an Unroute takes them down.
	RoutesLeft bool
	// RouteComing is true when the router, asked in this reconcile, could
	// not put the routes in place yet because a NEG forwarder has no Ready
	// pod (WakeOnRequest False, ForwarderNotReady): the Service's slices
	// would lead nowhere. A pause keeps the pods up for it, up to RouteWait
	// from the pause's start (docs/design/pause-wake.md#forwarded-slices).
	RouteComing bool
	// Dependents are what the workload's dependents say
	// (docs/design/dependencies.md); the zero value says nothing.
	Dependents Dependents
	// Schedule is what spec.schedule and the override annotations say
	// (docs/design/schedules-forecast.md#precedence, schedule.go); the zero
	// value says nothing.
	Schedule Schedule
	// Forecast is what the forecast says (forecast.go); the zero value says
	// nothing. It ranks below Schedule.
	Forecast Forecast
}

// Requeue delays while waiting on the cluster rather than on time.
const (
	// PodsGoneRecheck: pods may go without the target's status changing.
	PodsGoneRecheck = 5 * time.Second
	// RouteWait bounds how long a pause keeps the pods up while its route
	// is coming (Input.RouteComing): a forwarder pod starts in seconds, and
	// one that cannot (an image that cannot be pulled) must not keep an
	// idle workload awake for good; ForwarderNotReady then says why.
	RouteWait = 90 * time.Second
	// RouteComingRecheck is how often a pause waiting for its route looks
	// again: the router reads the forwarder's pods each time.
	RouteComingRecheck = 2 * time.Second
	// ReadyRecheck: the target's status changes when a pod is Ready, so
	// this is only a safety net.
	ReadyRecheck = 30 * time.Second
)

// signal is one activity signal that fired.
type signal struct {
	at     time.Time
	source string
	// by names who, for a dependent's wake.
	by string
}

// who is how an event names the signal: "request", or "dependent
// preview-42/front".
func (s signal) who() string {
	if s.by == "" {
		return s.source
	}
	return s.source + " " + s.by
}

// Next returns the one step to take next. Callers handle a target that is
// not found before asking (Next waits on one).
func Next(in Input) Step {
	now := in.Now.Truncate(time.Second)
	st := in.State
	if !in.Target.Found {
		return Step{Kind: Wait}
	}
	latest := newestActivity(in, now)
	pol := policyOf(in, now)
	if asleep(st.Phase) {
		latest = pol.asleepSignal(in, now, latest)
	}
	switch st.Phase {
	case "":
		return first(in, now, latest)
	case napwakev1alpha1.PhasePausing:
		return pausing(in, now, latest)
	case napwakev1alpha1.PhasePaused:
		return paused(in, now, latest)
	case napwakev1alpha1.PhaseResuming:
		if s, ok := pol.pauseStep(in, now); ok {
			return s
		}
		return resuming(in, now, latest)
	default: // Running
		if s, ok := pol.pauseStep(in, now); ok {
			return s
		}
		return running(in, now, latest)
	}
}

func first(in Input, now time.Time, latest signal) Step {
	act := signal{at: now, source: napwakev1alpha1.SourceCreated}
	if latest.at.After(act.at) {
		act = latest
	}
	if in.Target.Replicas == 0 {
		// Already at zero when first managed: take it as paused from now,
		// saving its 0 replicas; a wake brings it to 1.
		next := State{
			Phase:              napwakev1alpha1.PhasePausing,
			Pause:              &napwakev1alpha1.PauseStatus{Replicas: 0, Reason: napwakev1alpha1.PauseIdle},
			LastActivity:       act.at,
			LastActivitySource: act.source,
		}
		next.Pause.StartedAt.Time = now
		return Step{Kind: PatchStatus, State: next, Paused: napwakev1alpha1.PauseIdle,
			Event: normal(napwakev1alpha1.EventPausing, "Pausing (Idle): the target already has 0 replicas; a wake scales it to 1")}
	}
	next := State{Phase: napwakev1alpha1.PhaseRunning, LastActivity: act.at, LastActivitySource: act.source}
	next.PauseAt = act.at.Add(in.IdleAfter)
	return Step{Kind: PatchStatus, State: next}
}

func running(in Input, now time.Time, latest signal) Step {
	next := in.State
	next.Phase = napwakev1alpha1.PhaseRunning
	if latest.at.After(next.LastActivity) || next.LastActivity.IsZero() {
		next.LastActivity, next.LastActivitySource = latest.at, latest.source
		if next.LastActivity.IsZero() {
			next.LastActivity, next.LastActivitySource = now, napwakev1alpha1.SourceCreated
		}
	}
	next.PauseAt = idleUntil(in, next.LastActivity)
	if in.RoutesLeft && !in.Unrouted && (in.Dependents.Held || now.Before(next.PauseAt)) {
		// A wake whose route removal failed still became Running; its
		// routes go now, not at the next pause (a pause due now routes
		// afresh instead, keeping their ports).
		return Step{Kind: Unroute}
	}
	if in.Dependents.Held {
		if !next.Equal(in.State) {
			return Step{Kind: PatchStatus, State: next}
		}
		return Step{Kind: Wait, RequeueAfter: positive(in.Dependents.HeldUntil.Sub(now))}
	}
	if !now.Before(next.PauseAt) {
		if s, ok := forecastHold(in, next, now); ok {
			return s
		}
		return startPause(in, next, now, napwakev1alpha1.PauseIdle)
	}
	pol := policyOf(in, now)
	if pol.holdUntil().IsZero() { // a window or keep-awake-until outranks the forecast
		if s, ok := forecastPauseEarly(in, next, now); ok {
			return s
		}
	}
	if !next.Equal(in.State) {
		return Step{Kind: PatchStatus, State: next}
	}
	return Step{Kind: Wait, RequeueAfter: sooner(next.PauseAt.Sub(now), pol.nextChange(now))}
}

// idleUntil is the Running pauseAt for lastActivity: idleAfter from the
// later of it and the last holder's release, or zero while held.
func idleUntil(in Input, lastActivity time.Time) time.Time {
	if in.Dependents.Held {
		return time.Time{}
	}
	from := lastActivity
	if r := in.Dependents.ReleasedAt.Truncate(time.Second); r.After(from) {
		from = r
	}
	if hold := policyOf(in, in.Now.Truncate(time.Second)).holdUntil(); hold.After(from.Add(in.IdleAfter)) {
		return hold // a window or keep-awake-until: no idle pause before it ends
	}
	return from.Add(in.IdleAfter)
}

func positive(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

func pauseRequested(in Input, now time.Time) (Step, bool) {
	at, ok := parseTime(in.Annotations[napwakev1alpha1.AnnotationPauseRequested], now)
	if !ok || at.Before(in.Created.Truncate(time.Second)) { // the same second is not left over
		return Step{}, false
	}
	if in.State.Pause != nil && !at.After(in.State.Pause.StartedAt.Time) {
		return Step{}, false
	}
	if !in.State.ResumedAt.IsZero() && !at.After(in.State.ResumedAt) {
		return Step{}, false
	}
	next := in.State
	return startPause(in, next, now, napwakev1alpha1.PauseRequested), true
}

func startPause(in Input, next State, now time.Time, reason napwakev1alpha1.PauseReason) Step {
	replicas := in.Target.Replicas
	if in.State.Phase == napwakev1alpha1.PhaseResuming && in.State.Pause != nil {
		// A wake under way may not have scaled up yet (the operator died
		// or the scale failed after Resuming was written): the count it
		// restores is the one to save, not the target's 0.
		replicas = max(replicas, in.State.Pause.Replicas)
	}
	next.Phase = napwakev1alpha1.PhasePausing
	next.Pause = &napwakev1alpha1.PauseStatus{Replicas: replicas, Reason: reason}
	next.Pause.StartedAt.Time = now
	next.PauseAt = time.Time{}
	return Step{Kind: PatchStatus, State: next, Paused: reason,
		Event: normal(napwakev1alpha1.EventPausing, "Pausing ("+string(reason)+"): saving "+itoa(replicas)+" replicas, then scaling to 0")}
}

func pausing(in Input, now time.Time, latest signal) Step {
	st := in.State
	if st.Pause == nil { // cannot happen with this package's writes; start afresh
		return startPause(in, st, now, napwakev1alpha1.PauseIdle)
	}
	if inPause(latest, st.Pause) {
		s := startWake(in, now, latest)
		s.Event = normal(napwakev1alpha1.EventPauseCalledOff, "Pause called off by "+latest.who()+"; restoring "+itoa(WantReplicas(st.Pause))+" replicas")
		return s
	}
	t := in.Target
	if t.Replicas > 0 && t.Replicas != st.Pause.Replicas {
		next := st
		p := *st.Pause
		p.Replicas = t.Replicas
		next.Pause = &p
		return Step{Kind: PatchStatus, State: next}
	}
	if t.Replicas > 0 {
		// Routed, or tried: a routing failure never holds up a pause
		// (docs/troubleshooting.md). The router waits for a new port's
		// listeners within its Route, so the slice is in place before the
		// pods stop whenever routing works; when it fails, it is retried
		// with backoff while the workload pauses. A route that is coming
		// (a NEG forwarder starting) is waited for, within RouteWait: until
		// it is Ready the pods are the only endpoints the Service has.
		if in.Routed && in.RouteComing && now.Before(st.Pause.StartedAt.Add(RouteWait)) {
			return Step{Kind: Wait, RequeueAfter: RouteComingRecheck}
		}
		return routedFirst(in, Step{Kind: Scale, Replicas: 0})
	}
	if t.StatusReplicas > 0 || t.PodsLeft {
		return routedFirst(in, Step{Kind: Wait, RequeueAfter: PodsGoneRecheck})
	}
	next := st
	next.Phase = napwakev1alpha1.PhasePaused
	return Step{Kind: PatchStatus, State: next,
		Event: normal(napwakev1alpha1.EventPaused, "Paused ("+string(st.Pause.Reason)+"): no pod left; a wake restores "+itoa(WantReplicas(st.Pause))+" replicas")}
}

// inPause says whether signal latest (not the default usage signal, which
// only counts while Running) fired during pause p, by the rule the doorman
// stamps by (onewake.Pause.In): a signal in the pause's own second counts
// as in it, since a request can only reach the doorman once the pause has
// begun, and ignoring it would hold its caller until maxWait for nothing.
func inPause(latest signal, p *napwakev1alpha1.PauseStatus) bool {
	return latest.source != "" && latest.source != napwakev1alpha1.SourceUsage && onewake.Of(p.StartedAt.Time).In(latest.at)
}

func paused(in Input, now time.Time, latest signal) Step {
	st := in.State
	if st.Pause == nil {
		return startPause(in, st, now, napwakev1alpha1.PauseIdle)
	}
	if inPause(latest, st.Pause) {
		return startWake(in, now, latest)
	}
	pol := policyOf(in, now)
	if in.Target.Replicas > 0 {
		if s, ok := pol.rescaled(in, now); ok {
			return s
		}
		return startWake(in, now, signal{at: now, source: napwakev1alpha1.SourceScaled})
	}
	if pol.pauseUntil.IsZero() { // pause-until outranks the forecast
		if s, ok := forecastWake(in, now); ok {
			return s
		}
	}
	return routedFirst(in, Step{Kind: Wait, RequeueAfter: pol.nextChange(now)})
}

// routedFirst is s once the router was asked to route in this reconcile,
// else the Route step that comes before it: the routes lead callers to the
// doorman before the pods go, and stay current while none is left.
func routedFirst(in Input, s Step) Step {
	if in.Routed {
		return s
	}
	return Step{Kind: Route}
}

func startWake(in Input, now time.Time, why signal) Step {
	next := in.State
	next.Phase = napwakev1alpha1.PhaseResuming
	next.ResumedAt = now
	next.PauseAt = time.Time{}
	if why.at.After(next.LastActivity) {
		next.LastActivity, next.LastActivitySource = why.at, why.source
	}
	s := Step{Kind: PatchStatus, State: next, Woken: why.source, WokenAt: why.at, PausedFor: now.Sub(in.State.Pause.StartedAt.Time),
		Event: normal(napwakev1alpha1.EventWaking, "Waking, woken by "+why.who()+": restoring "+itoa(WantReplicas(in.State.Pause))+" replicas")}
	if want := WantReplicas(in.State.Pause); in.Target.Replicas < want && signalStays(why.source) {
		s.ScaleAlong = want
	}
	return s
}

// signalStays says whether a wake by source is read again from the
// ManagedWorkload by the next reconcile whatever was written (its
// annotations), so the wake's scale may go beside its status write.
func signalStays(source string) bool {
	switch source {
	case napwakev1alpha1.SourceRequest, napwakev1alpha1.SourceAnnotation, napwakev1alpha1.SourceWakeRequested:
		return true
	}
	return false
}

func resuming(in Input, now time.Time, latest signal) Step {
	st := in.State
	want := WantReplicas(st.Pause)
	if in.Target.Replicas < want {
		return Step{Kind: Scale, Replicas: want}
	}
	next := st
	if latest.source != "" && latest.at.After(next.LastActivity) {
		next.LastActivity, next.LastActivitySource = latest.at, latest.source
	}
	if in.Target.ReadyReplicas < 1 {
		if !next.Equal(st) {
			return Step{Kind: PatchStatus, State: next}
		}
		return Step{Kind: Wait, RequeueAfter: ReadyRecheck}
	}
	if !in.Unrouted {
		// The routes go before Running is persisted: a crash in between
		// leaves Resuming, whose next reconcile unroutes again.
		return Step{Kind: Unroute}
	}
	next.Phase = napwakev1alpha1.PhaseRunning
	next.PauseAt = idleUntil(in, next.LastActivity)
	if !in.Dependents.Held && next.PauseAt.Before(now) {
		// A wake counts as activity: never pause again the moment it is up.
		next.PauseAt = now.Add(in.IdleAfter)
		next.LastActivity = now
	}
	s := Step{Kind: PatchStatus, State: next,
		Event: normal(napwakev1alpha1.EventRunning, "Running: a pod is Ready")}
	if !st.ResumedAt.IsZero() {
		s.ResumeTook = now.Sub(st.ResumedAt)
	}
	return s
}

func normal(reason, msg string) Event {
	return Event{Type: corev1.EventTypeNormal, Reason: reason, Message: msg}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
