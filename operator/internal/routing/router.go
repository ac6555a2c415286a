package routing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"

	"napwake.dev/operator/internal/routing/epslice"
	"napwake.dev/operator/internal/routing/plan"
	"napwake.dev/operator/internal/routing/ports"
)

// maxRoutes is the most routes or holds a ManagedWorkload's status accepts
// (the CRD's MaxItems).
const maxRoutes = 256

// maxMessage bounds the condition message: 100 Services left out must not
// make the status too big to write.
const maxMessage = 4096

// Options configure a Router. The zero value of each field takes its default.
type Options struct {
	// DoormanService is namespace/name of the headless Service selecting the
	// doorman pods (--doorman-service). "" disables routing: workloads
	// report WakeOnRequest=False DoormanDisabled.
	DoormanService string
	// PortsPerWorkload caps one workload's doorman ports. Default 32; at most
	// 256, the most routes a status holds.
	PortsPerWorkload int
	// PortsPerNamespace caps a namespace's doorman ports. Default 256.
	PortsPerNamespace int
	// PortHold is how long a released port stays out of use. Default 1m.
	PortHold time.Duration
	// RedecideAfter is how soon a workload whose Service other pods serve is
	// routed again. Default 30s.
	RedecideAfter time.Duration
	// ListenTimeout bounds the wait for every Ready doorman pod to listen on
	// a new port. Default 5s.
	ListenTimeout time.Duration
	// Concurrency bounds parallel slice writes and connection checks when
	// the doorman pods change. Default 32.
	Concurrency int
	// RetryMin and RetryMax bound the backoff after a failed slice write.
	// Defaults 5s and 5m.
	RetryMin, RetryMax time.Duration
	// Dial connects to a doorman pod's address to check it listens. Default
	// a net.Dialer; tests stand doorman pods in with loopback listeners.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

func (o *Options) setDefaults() {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.PortsPerWorkload <= 0 {
		o.PortsPerWorkload = napwakev1alpha1.DefaultPortsPerWorkload
	}
	if o.PortsPerWorkload > maxRoutes {
		o.PortsPerWorkload = maxRoutes
	}
	if o.PortsPerNamespace <= 0 {
		o.PortsPerNamespace = napwakev1alpha1.DefaultPortsPerNamespace
	}
	def(&o.PortHold, time.Minute)
	def(&o.RedecideAfter, 30*time.Second)
	def(&o.ListenTimeout, 5*time.Second)
	def(&o.RetryMin, 5*time.Second)
	def(&o.RetryMax, 5*time.Minute)
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.Dial == nil {
		var d net.Dialer
		o.Dial = d.DialContext
	}
}

// Router routes paused workloads' Services to the doorman. It implements
// the pause/wake core's controller.Router.
type Router struct {
	c        client.Client
	reader   client.Reader
	opts     Options
	doorman  types.NamespacedName
	clock    clock.PassiveClock
	recorder events.EventRecorder

	// mu guards the allocator; seeded says it holds every status's ports.
	mu     sync.Mutex
	alloc  *ports.Allocator
	seeded bool

	// locks serialises Route/Unroute/Finalize per workload: both the
	// pause/wake reconciler and the router's own controller call them.
	locksMu sync.Mutex
	locks   map[types.NamespacedName]*sync.Mutex

	// stateMu guards failures and warned.
	stateMu  sync.Mutex
	failures map[types.NamespacedName]int
	warned   map[types.NamespacedName]map[string]time.Time // event reason -> pause it was raised for

	// kick re-routes a workload through the router's own controller.
	kick chan event.GenericEvent
	// doormen is the Ready doorman set last applied to the slices.
	doormenMu sync.Mutex
	applied   []epslice.Doorman
	appliedOK bool
}

// New returns a Router. c is the manager's (cached) client; reader reads
// past the cache (the manager's APIReader): Services' own EndpointSlices,
// which the operator does not cache, and the slices it is about to write.
func New(c client.Client, reader client.Reader, opts Options, clk clock.PassiveClock, recorder events.EventRecorder) (*Router, error) {
	if c == nil || reader == nil || clk == nil || recorder == nil {
		return nil, errors.New("routing.New: client, reader, clock and recorder are required")
	}
	opts.setDefaults()
	r := &Router{
		c: c, reader: reader, opts: opts, clock: clk, recorder: recorder,
		locks:    map[types.NamespacedName]*sync.Mutex{},
		failures: map[types.NamespacedName]int{},
		warned:   map[types.NamespacedName]map[string]time.Time{},
		kick:     make(chan event.GenericEvent, 1024),
	}
	if opts.DoormanService != "" {
		ns, name, ok := strings.Cut(opts.DoormanService, "/")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("doorman Service %q: want namespace/name", opts.DoormanService)
		}
		r.doorman = types.NamespacedName{Namespace: ns, Name: name}
	}
	a, err := ports.New(ports.Limits{
		Min: napwakev1alpha1.DoormanPortMin, Max: napwakev1alpha1.DoormanPortMax,
		PerWorkload: opts.PortsPerWorkload, PerNamespace: opts.PortsPerNamespace,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the doorman port allocator: %w", err)
	}
	r.alloc = a
	return r, nil
}

func (r *Router) lock(k types.NamespacedName) func() {
	r.locksMu.Lock()
	m, ok := r.locks[k]
	if !ok {
		m = &sync.Mutex{}
		r.locks[k] = m
	}
	r.locksMu.Unlock()
	m.Lock()
	return m.Unlock
}

// seed records every ManagedWorkload's ports and holds in the allocator,
// once, read past the cache.
func (r *Router) seed(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seeded {
		return nil
	}
	var list napwakev1alpha1.ManagedWorkloadList
	if err := r.reader.List(ctx, &list); err != nil {
		return fmt.Errorf("listing ManagedWorkloads to seed the doorman port allocator: %w", err)
	}
	for i := range list.Items {
		mw := &list.Items[i]
		if mw.Status.Doorman == nil {
			continue
		}
		owned := make([]int32, 0, len(mw.Status.Doorman.Routes))
		for _, rt := range mw.Status.Doorman.Routes {
			owned = append(owned, rt.DoormanPort)
		}
		if c := r.alloc.Observe(keyOf(mw), owned, holdsOf(mw)); len(c) > 0 {
			log.FromContext(ctx).Info("Doorman ports recorded by two ManagedWorkloads; re-routing the later one", "managedWorkload", klogKey(mw), "ports", c)
		}
	}
	r.seeded = true
	return nil
}

func keyOf(mw *napwakev1alpha1.ManagedWorkload) ports.Key {
	return ports.Key{Namespace: mw.Namespace, Name: mw.Name}
}

func klogKey(mw *napwakev1alpha1.ManagedWorkload) string { return mw.Namespace + "/" + mw.Name }

func holdsOf(mw *napwakev1alpha1.ManagedWorkload) []ports.Hold {
	if mw.Status.Doorman == nil {
		return nil
	}
	out := make([]ports.Hold, 0, len(mw.Status.Doorman.PortHolds))
	for _, h := range mw.Status.Doorman.PortHolds {
		out = append(out, ports.Hold{Port: h.Port, Until: h.Until.Time})
	}
	return out
}

// Route routes the workload's Services to the doorman. See
// controller.Router.
func (r *Router) Route(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, tmpl *corev1.PodTemplateSpec) (time.Duration, error) {
	key := client.ObjectKeyFromObject(mw)
	defer r.lock(key)()
	if err := r.seed(ctx); err != nil {
		return r.opts.RetryMin, err
	}
	switch {
	case r.opts.DoormanService == "":
		return 0, r.takeDown(ctx, mw, true, plan.Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonDoormanDisabled,
			Message: "routing is off (--doorman-service=\"\"): requests to the paused workload fail"})
	case tmpl == nil:
		return 0, r.takeDown(ctx, mw, true, plan.Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonTargetNotFound,
			Message: fmt.Sprintf("%s %s is gone, so nothing would start its pods: routing removed", mw.Spec.TargetRef.Kind, mw.Spec.TargetRef.Name)})
	}
	doormen, err := r.doormen(ctx)
	if err != nil {
		return r.opts.RetryMin, err
	}
	if len(doormen) == 0 {
		// Routes stay in status, so their ports do; the slices go until a
		// doorman pod is Ready again, when the doorman controller re-routes.
		return r.opts.RedecideAfter, r.takeDown(ctx, mw, false, plan.Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonDoormanUnavailable,
			Message: fmt.Sprintf("no doorman pod is Ready (Service %s): routing removed until one is", r.doorman)})
	}
	in, err := r.gather(ctx, mw, tmpl, doormen)
	if err != nil {
		return r.opts.RetryMin, err
	}
	d := plan.Decide(in)
	now := r.clock.Now()
	old := routesOf(mw)
	routes, released, allocErr := r.allocate(mw, d.Routes, old, now)
	cond := d.Condition(mw.Spec.Wake.Mode == napwakev1alpha1.WakeAsk, !plan.HasReadinessProbe(tmpl))
	if allocErr != nil {
		reason := napwakev1alpha1.ReasonNoFreePort
		if errors.Is(allocErr, ports.ErrTooManyPorts) {
			reason = napwakev1alpha1.ReasonTooManyPorts
		}
		cond = plan.Condition{Status: metav1.ConditionFalse, Reason: reason, Message: allocErr.Error() + "; no Service is routed"}
	}
	if err := r.patchStatus(ctx, mw, routes, released, cond); err != nil {
		return r.backoff(key), err
	}
	if len(routes) > 0 && !plan.HasReadinessProbe(tmpl) {
		r.warnOnce(mw, napwakev1alpha1.EventNoReadinessProbe, plan.MessageNoReadinessProbe+"; give the app a readiness probe that passes once it can serve")
	}
	if lb := d.UnsupportedLB(); len(lb) > 0 {
		r.warnOnce(mw, napwakev1alpha1.EventUnsupportedLB, "not routed, in GKE NEGs (turn on the NEG forwarder to route them): "+strings.Join(lb, ", "))
	}
	if err := r.checkListening(ctx, doormen, routes, newPorts(routes, old)); err != nil {
		return r.fail(ctx, mw, routes, fmt.Errorf("checking the doorman listens: %w", err))
	}
	shared, err := r.writeSlices(ctx, mw, epslice.BuildAll(mw.Namespace, mw.Name, routes, r.serviceUIDs(ctx, mw.Namespace, routes), doormen))
	if err != nil {
		return r.fail(ctx, mw, routes, err)
	}
	r.stateMu.Lock()
	delete(r.failures, key)
	r.stateMu.Unlock()
	if len(shared) > 0 {
		// Another paused workload behind the same Service routes it: the
		// doorman wakes every workload routed for a Service port a request
		// reaches, so this one wakes too. Its own route and port stay, and it
		// is decided again within RedecideAfter, to route the Service itself
		// if the other's slice goes while it is still paused.
		cond.Message += "; " + sharedMessage(shared)
		if err := r.patchStatus(ctx, mw, routes, nil, cond); err != nil {
			return r.backoff(key), err
		}
		return r.opts.RedecideAfter, nil
	}
	if d.ServedByOtherPods() {
		return r.opts.RedecideAfter, nil
	}
	return 0, nil
}

// sharedMessage names the Services another workload routes, and whose
// route they are (service -> workload).
func sharedMessage(shared map[string]string) string {
	names := make([]string, 0, len(shared))
	for svc := range shared {
		names = append(names, svc)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, svc := range names {
		parts = append(parts, fmt.Sprintf("%s through ManagedWorkload %s's route", svc, shared[svc]))
	}
	return "shared with other paused workloads, a request wakes them all: " + strings.Join(parts, ", ")
}

// Unroute takes the workload's routing down once it is awake. See
// controller.Router.
func (r *Router) Unroute(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) (time.Duration, error) {
	key := client.ObjectKeyFromObject(mw)
	defer r.lock(key)()
	if err := r.seed(ctx); err != nil {
		return r.opts.RetryMin, err
	}
	r.forget(key)
	routed := routesOf(mw)
	cond := plan.NotPaused(meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest))
	if err := r.takeDown(ctx, mw, true, cond); err != nil {
		return 0, err
	}
	return 0, r.kickBehind(ctx, mw, routed)
}

// kickBehind re-routes, through the routing controller, the other paused
// workloads routing a Service this awake one routed: its Ready pods may
// serve that Service now (ServedByOtherPods), and its route, if it was the
// one they shared, is gone. It does so at once and again RedecideAfter
// later: the Service's own EndpointSlices, which the decision reads, may
// not show the awake pods yet at once, and a workload that took the
// Service's route over then would keep it while those pods serve it.
func (r *Router) kickBehind(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, routed []napwakev1alpha1.Route) error {
	if len(routed) == 0 {
		return nil
	}
	services := map[string]bool{}
	for _, rt := range routed {
		services[rt.Service] = true
	}
	kick := func(ctx context.Context) error {
		return r.kickRouted(ctx, func(other *napwakev1alpha1.ManagedWorkload) bool {
			return other.Name != mw.Name && slices.ContainsFunc(routesOf(other), func(rt napwakev1alpha1.Route) bool { return services[rt.Service] })
		}, client.InNamespace(mw.Namespace))
	}
	afterFunc(r.clock, r.opts.RedecideAfter, func() {
		if err := kick(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "Re-routing the workloads behind an awake one's Services", "managedWorkload", klogKey(mw))
		}
	})
	return kick(ctx)
}

// afterFunc runs f after d on clk when clk can (the real clock and the
// tests' fake one both can), else on the real clock.
func afterFunc(clk clock.PassiveClock, d time.Duration, f func()) {
	if c, ok := clk.(clock.WithDelayedExecution); ok {
		c.AfterFunc(d, f)
		return
	}
	time.AfterFunc(d, f)
}

// Finalize takes routing down for a deleted workload, and is done once its
// slices are gone and its port holds are over. See controller.Router.
func (r *Router) Finalize(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) (bool, time.Duration, error) {
	key := client.ObjectKeyFromObject(mw)
	defer r.lock(key)()
	if err := r.seed(ctx); err != nil {
		return false, r.opts.RetryMin, err
	}
	r.forget(key)
	cond := plan.NotPaused(meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest))
	if err := r.takeDown(ctx, mw, true, cond); err != nil {
		return false, r.opts.RetryMin, err
	}
	now := r.clock.Now()
	var last time.Time
	for _, h := range holdsOf(mw) {
		if h.Until.After(last) {
			last = h.Until
		}
	}
	if last.After(now) {
		return false, last.Sub(now), nil
	}
	return true, 0, nil
}

func (r *Router) forget(key types.NamespacedName) {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	delete(r.failures, key)
	delete(r.warned, key)
}

// takeDown deletes the workload's slices and sets the condition; with
// release, its routes go and their ports are held.
func (r *Router) takeDown(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, release bool, cond plan.Condition) error {
	if err := r.deleteSlices(ctx, mw, nil); err != nil {
		return err
	}
	routes := routesOf(mw)
	var released []ports.Hold
	if release {
		r.mu.Lock()
		released = r.alloc.Release(keyOf(mw), r.clock.Now(), r.opts.PortHold)
		r.mu.Unlock()
		routes = nil
	}
	return r.patchStatus(ctx, mw, routes, released, cond)
}

func routesOf(mw *napwakev1alpha1.ManagedWorkload) []napwakev1alpha1.Route {
	if mw.Status.Doorman == nil {
		return nil
	}
	return mw.Status.Doorman.Routes
}

type routeKey struct {
	service, portName string
	port              int32
}

// allocate gives each wanted route a doorman port, keeping the port of a
// route the workload already had.
func (r *Router) allocate(mw *napwakev1alpha1.ManagedWorkload, wants []plan.Want, old []napwakev1alpha1.Route, now time.Time) ([]napwakev1alpha1.Route, []ports.Hold, error) {
	k := keyOf(mw)
	had := map[routeKey]int32{}
	for _, rt := range old {
		had[routeKey{rt.Service, rt.PortName, rt.Port}] = rt.DoormanPort
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alloc.Expire(now)
	var keep []int32
	fresh := 0
	kept := map[routeKey]int32{}
	for _, w := range wants {
		rk := routeKey{w.Service, w.PortName, w.Port}
		if p, ok := had[rk]; ok {
			if o, owned := r.alloc.Owner(p); owned && o == k {
				keep = append(keep, p)
				kept[rk] = p
				continue
			}
		}
		fresh++
	}
	got, released, err := r.alloc.Assign(k, keep, fresh, now, r.opts.PortHold)
	if err != nil {
		released = r.alloc.Release(k, now, r.opts.PortHold)
		return nil, released, err
	}
	routes := make([]napwakev1alpha1.Route, 0, len(wants))
	for _, w := range wants {
		p, ok := kept[routeKey{w.Service, w.PortName, w.Port}]
		if !ok {
			p, got = got[0], got[1:]
		}
		routes = append(routes, napwakev1alpha1.Route{Service: w.Service, PortName: w.PortName, Port: w.Port, DoormanPort: p, IPFamilies: w.IPFamilies})
	}
	return routes, released, nil
}

func newPorts(routes, old []napwakev1alpha1.Route) map[int32]bool {
	had := map[int32]bool{}
	for _, rt := range old {
		had[rt.DoormanPort] = true
	}
	out := map[int32]bool{}
	for _, rt := range routes {
		if !had[rt.DoormanPort] {
			out[rt.DoormanPort] = true
		}
	}
	return out
}

// patchStatus persists routes, holds (expired ones dropped, released ones
// added) and the WakeOnRequest condition, updating mw in place. A conflict
// is retried on a fresh copy, which then replaces mw.
func (r *Router) patchStatus(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, routes []napwakev1alpha1.Route, released []ports.Hold, cond plan.Condition) error {
	now := r.clock.Now()
	if len(cond.Message) > maxMessage {
		cond.Message = cond.Message[:maxMessage-3] + "..."
	}
	for attempt := 0; ; attempt++ {
		base := mw.DeepCopy()
		ds := &napwakev1alpha1.DoormanStatus{Routes: routes}
		holds := map[int32]time.Time{}
		for _, h := range append(holdsOf(mw), released...) {
			if h.Until.After(now) && h.Until.After(holds[h.Port]) {
				holds[h.Port] = h.Until
			}
		}
		for p, u := range holds {
			ds.PortHolds = append(ds.PortHolds, napwakev1alpha1.PortHold{Port: p, Until: metav1.NewTime(u)})
		}
		// Latest first, so the status keeps the holds that matter longest.
		sort.Slice(ds.PortHolds, func(i, j int) bool {
			if !ds.PortHolds[i].Until.Equal(&ds.PortHolds[j].Until) {
				return ds.PortHolds[j].Until.Before(&ds.PortHolds[i].Until)
			}
			return ds.PortHolds[i].Port < ds.PortHolds[j].Port
		})
		if len(ds.PortHolds) > maxRoutes {
			ds.PortHolds = ds.PortHolds[:maxRoutes]
		}
		if len(ds.Routes) == 0 && len(ds.PortHolds) == 0 {
			ds = nil
		}
		mw.Status.Doorman = ds
		meta.SetStatusCondition(&mw.Status.Conditions, metav1.Condition{
			Type: napwakev1alpha1.ConditionWakeOnRequest, Status: cond.Status, Reason: cond.Reason, Message: cond.Message,
			ObservedGeneration: mw.Generation,
		})
		if equality.Semantic.DeepEqual(base.Status, mw.Status) {
			return nil
		}
		err := r.c.Status().Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err):
			*mw = *base
			return nil
		case !apierrors.IsConflict(err) || attempt >= 3:
			*mw = *base
			return fmt.Errorf("patching ManagedWorkload %s status: %w", klogKey(mw), err)
		}
		fresh := &napwakev1alpha1.ManagedWorkload{}
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(mw), fresh); err != nil {
			*mw = *base
			return fmt.Errorf("getting ManagedWorkload %s after a conflict: %w", klogKey(mw), err)
		}
		*mw = *fresh
	}
}

// fail records a failed routing step: RoutingFailed, a warning event, and
// a retry with backoff from RetryMin to RetryMax. The routes stay, so their
// ports do.
func (r *Router) fail(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, routes []napwakev1alpha1.Route, err error) (time.Duration, error) {
	r.recorder.Eventf(mw, nil, corev1.EventTypeWarning, napwakev1alpha1.EventRoutingFailed, napwakev1alpha1.EventRoutingFailed, "%s", err.Error())
	cond := plan.Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonRoutingFailed, Message: err.Error()}
	if perr := r.patchStatus(ctx, mw, routes, nil, cond); perr != nil {
		err = errors.Join(err, perr)
	}
	return r.backoff(client.ObjectKeyFromObject(mw)), err
}

func (r *Router) backoff(key types.NamespacedName) time.Duration {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	r.failures[key]++
	d := r.opts.RetryMin
	for i := 1; i < r.failures[key] && d < r.opts.RetryMax; i++ {
		d *= 2
	}
	return min(d, r.opts.RetryMax)
}

// warnOnce raises a warning event once per pause of the workload.
func (r *Router) warnOnce(mw *napwakev1alpha1.ManagedWorkload, reason, msg string) {
	var pause time.Time
	if mw.Status.Pause != nil {
		pause = mw.Status.Pause.StartedAt.Time
	}
	key := client.ObjectKeyFromObject(mw)
	r.stateMu.Lock()
	if r.warned[key] == nil {
		r.warned[key] = map[string]time.Time{}
	}
	last, seen := r.warned[key][reason]
	r.warned[key][reason] = pause
	r.stateMu.Unlock()
	if !seen || !last.Equal(pause) {
		r.recorder.Eventf(mw, nil, corev1.EventTypeWarning, reason, reason, "%s", msg)
	}
}

// gather reads what the plan needs: the namespace's Services and Ingresses
// (cached), and which Services other pods serve (read past the cache).
func (r *Router) gather(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, tmpl *corev1.PodTemplateSpec, doormen []epslice.Doorman) (plan.Input, error) {
	in := plan.Input{PodLabels: tmpl.Labels, DoormanFamilies: epslice.Families(doormen), ServedByOtherPods: map[string]bool{}}
	var svcs corev1.ServiceList
	if err := r.c.List(ctx, &svcs, client.InNamespace(mw.Namespace)); err != nil {
		return in, fmt.Errorf("listing Services in %s: %w", mw.Namespace, err)
	}
	in.Services = svcs.Items
	var ings networkingv1.IngressList
	if err := r.c.List(ctx, &ings, client.InNamespace(mw.Namespace)); err != nil {
		return in, fmt.Errorf("listing Ingresses in %s: %w", mw.Namespace, err)
	}
	in.Ingresses = ings.Items
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if !plan.Selects(svc, tmpl.Labels) {
			continue
		}
		other, err := r.servedByOtherPods(ctx, svc, tmpl.Labels)
		if err != nil {
			return in, err
		}
		in.ServedByOtherPods[svc.Name] = other
	}
	return in, nil
}

// servedByOtherPods reports whether a Ready endpoint in the Service's own
// EndpointSlices is a pod that isn't the workload's (its labels don't carry
// the workload's template labels), or no pod at all.
func (r *Router) servedByOtherPods(ctx context.Context, svc *corev1.Service, podLabels map[string]string) (bool, error) {
	var slices discoveryv1.EndpointSliceList
	if err := r.reader.List(ctx, &slices, client.InNamespace(svc.Namespace), client.MatchingLabels{
		napwakev1alpha1.LabelServiceName:            svc.Name,
		napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceControllerManager,
	}); err != nil {
		return false, fmt.Errorf("listing Service %s/%s's EndpointSlices: %w", svc.Namespace, svc.Name, err)
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" {
				return true, nil
			}
			var pod corev1.Pod
			ns := e.TargetRef.Namespace
			if ns == "" {
				ns = svc.Namespace
			}
			if err := r.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: e.TargetRef.Name}, &pod); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return false, fmt.Errorf("getting pod %s/%s behind Service %s: %w", ns, e.TargetRef.Name, svc.Name, err)
			}
			if !carries(pod.Labels, podLabels) {
				return true, nil
			}
		}
	}
	return false, nil
}

func carries(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// doormen returns the Ready doorman pods' addresses, from the doorman
// Service's EndpointSlices.
func (r *Router) doormen(ctx context.Context) ([]epslice.Doorman, error) {
	var slices discoveryv1.EndpointSliceList
	if err := r.c.List(ctx, &slices, client.InNamespace(r.doorman.Namespace), client.MatchingLabels{napwakev1alpha1.LabelServiceName: r.doorman.Name}); err != nil {
		return nil, fmt.Errorf("listing the doorman Service %s's EndpointSlices: %w", r.doorman, err)
	}
	return DoormenFrom(slices.Items), nil
}

// DoormenFrom reads the Ready doorman addresses from the doorman Service's
// EndpointSlices: endpoints whose ready condition is true or unset, of
// address type IPv4 or IPv6, each address once, sorted.
func DoormenFrom(slices []discoveryv1.EndpointSlice) []epslice.Doorman {
	seen := map[string]bool{}
	var out []epslice.Doorman
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, ip := range e.Addresses {
				if seen[ip] || net.ParseIP(ip) == nil {
					continue
				}
				seen[ip] = true
				d := epslice.Doorman{IP: ip, Family: napwakev1alpha1.IPFamily(s.AddressType)}
				if e.TargetRef != nil {
					d.PodName, d.PodNS = e.TargetRef.Name, e.TargetRef.Namespace
				}
				if e.NodeName != nil {
					d.NodeName = *e.NodeName
				}
				out = append(out, d)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IP < out[j].IP })
	return out
}

// checkListening connects to every Ready doorman address of each route's
// families on each new port, retrying until ListenTimeout: the doorman
// starts listening once it sees the routes in status.
func (r *Router) checkListening(ctx context.Context, doormen []epslice.Doorman, routes []napwakev1alpha1.Route, fresh map[int32]bool) error {
	if len(fresh) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.ListenTimeout)
	defer cancel()
	var addrs []string
	for _, rt := range routes {
		if !fresh[rt.DoormanPort] {
			continue
		}
		for _, d := range doormen {
			for _, f := range rt.IPFamilies {
				if f == d.Family {
					addrs = append(addrs, net.JoinHostPort(d.IP, strconv.Itoa(int(rt.DoormanPort))))
				}
			}
		}
	}
	return forEach(ctx, r.opts.Concurrency, addrs, func(ctx context.Context, addr string) error {
		return r.waitListening(ctx, addr)
	})
}

func (r *Router) waitListening(ctx context.Context, addr string) error {
	t := time.NewTicker(100 * time.Millisecond) // 100 ms: the doorman needs a watch event to open a port
	defer t.Stop()
	for {
		c, err := r.opts.Dial(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("doorman pod at %s is not listening: %w", addr, err)
		case <-t.C:
		}
	}
}

// forEach runs fn on every item with at most n at once, and joins errors.
func forEach[T any](ctx context.Context, n int, items []T, fn func(context.Context, T) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, n)
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Router) serviceUIDs(ctx context.Context, namespace string, routes []napwakev1alpha1.Route) map[string]types.UID {
	out := map[string]types.UID{}
	for _, rt := range routes {
		if _, ok := out[rt.Service]; ok {
			continue
		}
		var svc corev1.Service
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: rt.Service}, &svc); err == nil {
			out[rt.Service] = svc.UID
		}
	}
	return out
}

// errNotOurs: a slice of the doorman's name that the operator didn't write
// for this workload; it is never overwritten.
var errNotOurs = errors.New("is not the operator's for this workload, and is never overwritten")

// writeSlices creates or updates the desired slices and deletes the
// workload's others. Slices are read past the cache: one just written may
// not be in it yet. A slice of the name that the operator wrote for
// another workload in the namespace (which the same Service selects, and
// is paused too) is left as it is and reported in shared, by Service.
func (r *Router) writeSlices(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, desired []discoveryv1.EndpointSlice) (shared map[string]string, err error) {
	var errs []error
	// share records a slice written for another workload; false if it isn't.
	share := func(s *discoveryv1.EndpointSlice) bool {
		w := otherWorkloads(s, mw.Name)
		if w == "" {
			return false
		}
		if shared == nil {
			shared = map[string]string{}
		}
		shared[s.Labels[napwakev1alpha1.LabelServiceName]] = w
		return true
	}
	keepNames := map[string]bool{}
	for i := range desired {
		want := &desired[i]
		keepNames[want.Name] = true
		var have discoveryv1.EndpointSlice
		err := r.reader.Get(ctx, client.ObjectKeyFromObject(want), &have)
		switch {
		case apierrors.IsNotFound(err):
			err := r.c.Create(ctx, want)
			if apierrors.IsAlreadyExists(err) {
				// Another workload behind the Service, pausing at the same
				// moment, wrote it first.
				if gerr := r.reader.Get(ctx, client.ObjectKeyFromObject(want), &have); gerr == nil && share(&have) {
					continue
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("creating EndpointSlice %s/%s: %w", want.Namespace, want.Name, err))
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("getting EndpointSlice %s/%s: %w", want.Namespace, want.Name, err))
		case share(&have): // another workload's, behind the same Service: left as it is
		case !epslice.Ours(&have, mw.Name):
			errs = append(errs, fmt.Errorf("EndpointSlice %s/%s (managed by %q, workload %q) %w", want.Namespace, want.Name,
				have.Labels[napwakev1alpha1.LabelEndpointSliceManagedBy], have.Labels[napwakev1alpha1.LabelWorkload], errNotOurs))
		case epslice.NeedsUpdate(&have, want):
			epslice.Apply(&have, want)
			if err := r.c.Update(ctx, &have); err != nil {
				errs = append(errs, fmt.Errorf("updating EndpointSlice %s/%s: %w", want.Namespace, want.Name, err))
			}
		}
	}
	if err := r.deleteSlices(ctx, mw, keepNames); err != nil {
		errs = append(errs, err)
	}
	return shared, errors.Join(errs...)
}

// otherWorkloads returns the workload a slice the operator wrote is for,
// when that is not workload; "" otherwise.
func otherWorkloads(s *discoveryv1.EndpointSlice, workload string) string {
	if w := s.Labels[napwakev1alpha1.LabelWorkload]; w != "" && w != workload && epslice.Ours(s, w) {
		return w
	}
	return ""
}

// deleteSlices deletes the workload's slices but those named in keep.
func (r *Router) deleteSlices(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, keep map[string]bool) error {
	var list discoveryv1.EndpointSliceList
	if err := r.reader.List(ctx, &list, client.InNamespace(mw.Namespace), client.MatchingLabels{
		napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager,
		napwakev1alpha1.LabelWorkload:               mw.Name,
	}); err != nil {
		return fmt.Errorf("listing ManagedWorkload %s's EndpointSlices: %w", klogKey(mw), err)
	}
	var errs []error
	for i := range list.Items {
		s := &list.Items[i]
		if keep[s.Name] {
			continue
		}
		if err := r.c.Delete(ctx, s, client.Preconditions{UID: &s.UID}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting EndpointSlice %s/%s: %w", s.Namespace, s.Name, err))
		}
	}
	return errors.Join(errs...)
}
