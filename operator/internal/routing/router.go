package routing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/forwarder"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/operator/internal/routing/epslice"
	"napwake.dev/operator/internal/routing/plan"
	"napwake.dev/operator/internal/routing/ports"
	"napwake.dev/operator/internal/workload"
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
	// Metrics record route moves. Default: the operator's metrics, made and
	// left unregistered (tests); the manager passes the registered ones.
	Metrics *metrics.Metrics
	// Forwarder turns the NEG forwarder on (see forwarded.go).
	Forwarder ForwarderOptions
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
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.Forwarder.Replicas <= 0 {
		o.Forwarder.Replicas = 2
	}
	def(&o.Forwarder.Linger, 90*time.Second)
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
	locks   map[types.NamespacedName]*keyLock

	// stateMu guards failures and warned.
	stateMu  sync.Mutex
	failures map[types.NamespacedName]int
	warned   map[types.NamespacedName]map[string]time.Time // event reason -> pause it was raised for

	// kick re-routes a workload through the router's own controller; reap
	// has the forwarders controller look at a forwarder Deployment.
	kick chan event.GenericEvent
	reap chan event.GenericEvent
	// doormen is the Ready doorman set last applied to the slices.
	doormenMu sync.Mutex
	applied   []epslice.Doorman
	appliedOK bool
	// settling: the set changed and the pass settleAfter later, which
	// catches slices the cache did not hold yet at the change, is due.
	settling bool
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
		locks:    map[types.NamespacedName]*keyLock{},
		failures: map[types.NamespacedName]int{},
		warned:   map[types.NamespacedName]map[string]time.Time{},
		kick:     make(chan event.GenericEvent, 1024),
		reap:     make(chan event.GenericEvent, 1024),
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

// keyLock is one workload's lock and how many hold or wait for it: the
// last to let go removes it, so the map holds only workloads in work (a
// map of every workload ever routed grew with each one deleted).
type keyLock struct {
	mu    sync.Mutex
	users int
}

func (r *Router) lock(k types.NamespacedName) func() {
	r.locksMu.Lock()
	l, ok := r.locks[k]
	if !ok {
		l = &keyLock{}
		r.locks[k] = l
	}
	l.users++
	r.locksMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		r.locksMu.Lock()
		if l.users--; l.users == 0 {
			delete(r.locks, k)
		}
		r.locksMu.Unlock()
	}
}

// Route routes the workload's Services to the doorman. See
// controller.Router.
func (r *Router) Route(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, tmpl *corev1.PodTemplateSpec) (time.Duration, error) {
	key := client.ObjectKeyFromObject(mw)
	defer r.lock(key)()
	if err := r.seed(ctx); err != nil {
		return r.opts.RetryMin, err
	}
	for attempt := 0; ; attempt++ {
		after, err := r.route(ctx, mw, tmpl)
		if !errors.Is(err, errStaleClaim) || attempt >= 2 {
			return after, err
		}
		// Claimed for an older workload than the API server's: claim
		// again from the newer one.
		fresh := &napwakev1alpha1.ManagedWorkload{}
		if gerr := r.reader.Get(ctx, key, fresh); gerr != nil {
			return r.opts.RetryMin, errors.Join(err, gerr)
		}
		*mw = *fresh
	}
}

// route is one try of Route.
func (r *Router) route(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, tmpl *corev1.PodTemplateSpec) (after time.Duration, err error) {
	key := client.ObjectKeyFromObject(mw)
	switch {
	case r.opts.DoormanService == "":
		return 0, r.takeDown(ctx, mw, true, plan.RoutingOff())
	case tmpl == nil:
		if r.forwarderOn() {
			if err := r.retireForwarder(ctx, mw.Namespace, forwarder.Name(mw.Name)); err != nil {
				return r.opts.RetryMin, err
			}
		}
		return 0, r.takeDown(ctx, mw, true, plan.TargetGone(string(mw.Spec.TargetRef.Kind), mw.Spec.TargetRef.Name))
	}
	doormen, err := r.doormen(ctx)
	if err != nil {
		return r.opts.RetryMin, err
	}
	if len(doormen) == 0 {
		// Routes stay in status, so their ports do; the slices go until a
		// doorman pod is Ready again, when the doorman controller re-routes.
		return r.opts.RedecideAfter, r.takeDown(ctx, mw, false, plan.NoDoorman(r.doorman.String()))
	}
	in, err := r.gather(ctx, mw, tmpl, doormen)
	if err != nil {
		return r.opts.RetryMin, err
	}
	in.Forwarder, in.NamedPorts = r.forwarderOn(), namedPorts(tmpl)
	d := plan.Decide(in)
	now := r.clock.Now()
	old := r.persistedRoutes(ctx, mw)
	routes, released, allocErr, err := r.allocateClaimed(ctx, mw, d.Routes, old, now)
	if err != nil {
		return r.backoff(key), err
	}
	check := toCheck(mw, routes, old) // before the status write below sets the condition
	targets := targetPorts(d.Routes)
	var fwd fwdState
	if r.forwarderOn() && allocErr == nil {
		if fwd, err = r.ensureForwarder(ctx, mw, routes, targets); err != nil {
			return r.fail(ctx, mw, routes, err)
		}
		d.ForwarderNotReady = fwd.notReady
	}
	out := d.Outcome(acted(mw, tmpl, routes, allocErr))
	if err := r.patchStatus(ctx, mw, routes, released, out.Condition); err != nil {
		return r.backoff(key), err
	}
	for _, w := range out.Warnings {
		r.warnOnce(mw, w.Reason, w.Message)
	}
	if err := r.checkListening(ctx, doormen, routes, check); err != nil {
		return r.fail(ctx, mw, routes, fmt.Errorf("checking the doorman listens: %w", err))
	}
	uids := r.serviceUIDs(ctx, mw.Namespace, routes)
	own := epslice.BuildAll(mw.Namespace, mw.Name, direct(routes), uids, doormen)
	deaf, err := r.admit(ctx, mw, own, doormen, check)
	if err != nil {
		return r.fail(ctx, mw, routes, err)
	}
	desired := slices.Concat(own, forwardedSlices(mw.Namespace, mw.Name, routes, targets, uids, fwd.ready))
	shared, err := r.writeSlices(ctx, mw, desired)
	if err != nil {
		return r.fail(ctx, mw, routes, err)
	}
	r.stateMu.Lock()
	delete(r.failures, key)
	r.stateMu.Unlock()
	if len(deaf) > 0 {
		// Routed through the doorman pods that listen; the others join
		// once they do.
		log.FromContext(ctx).Info("Doorman pods left out of the slices until they listen", "managedWorkload", klogKey(mw), "doormen", deaf)
	}
	if len(shared) > 0 {
		// Its own route and port stay; the condition names the other's.
		if err := r.patchStatus(ctx, mw, routes, nil, out.Shared(shared)); err != nil {
			return r.backoff(key), err
		}
	}
	switch d.Recheck(len(deaf) > 0, len(shared) > 0, fwd.notReady != "") {
	case plan.RecheckSoon:
		return r.opts.RetryMin, nil
	case plan.RecheckLater:
		return r.opts.RedecideAfter, nil
	}
	return 0, nil
}

// acted is what routing mw found acting on its decision: its wake mode,
// whether the no-probe warning applies (a template made up from a scale's
// selector says nothing of probes: TargetAvailable says so, see
// workload.NoTemplate, not a false warning here), its routes, and why no
// port could be allocated.
func acted(mw *napwakev1alpha1.ManagedWorkload, tmpl *corev1.PodTemplateSpec, routes []napwakev1alpha1.Route, allocErr error) plan.Acted {
	a := plan.Acted{
		Ask:     mw.Spec.Wake.Mode == napwakev1alpha1.WakeAsk,
		NoProbe: !plan.HasReadinessProbe(tmpl) && tmpl.Annotations[workload.AnnotationTemplateFromSelector] != "true",
		Routed:  len(routes) > 0,
	}
	if allocErr != nil {
		a.PortsFailed, a.TooManyPorts = allocErr.Error(), errors.Is(allocErr, ports.ErrTooManyPorts)
	}
	return a
}

// admit leaves out of each of the workload's slices a doorman pod it does
// not list yet that does not accept on the slice's ports (those of new
// ports, checked already, aside), and returns those pods. A slice no
// doorman pod of its family would be left in is an error.
func (r *Router) admit(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, own []discoveryv1.EndpointSlice, doormen []epslice.Doorman, checked map[int32]bool) ([]string, error) {
	var have discoveryv1.EndpointSliceList
	if err := r.reader.List(ctx, &have, client.InNamespace(mw.Namespace), client.MatchingLabels{
		napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager,
		napwakev1alpha1.LabelWorkload:               mw.Name,
	}); err != nil {
		return nil, fmt.Errorf("listing ManagedWorkload %s's EndpointSlices: %w", klogKey(mw), err)
	}
	listed := map[string][]discoveryv1.Endpoint{}
	for _, s := range have.Items {
		listed[s.Name] = s.Endpoints
	}
	// What each slice lists now, with the ports still to check.
	now := make([]*discoveryv1.EndpointSlice, len(own))
	for i := range own {
		s := &discoveryv1.EndpointSlice{AddressType: own[i].AddressType, Endpoints: listed[own[i].Name]}
		for _, p := range own[i].Ports {
			if p.Port != nil && !checked[*p.Port] {
				s.Ports = append(s.Ports, p)
			}
		}
		now[i] = s
	}
	admitted, deaf := r.joining(ctx, now, doormen)
	for i := range own {
		fam := napwakev1alpha1.IPFamily(own[i].AddressType)
		own[i].Endpoints = epslice.Endpoints(admitted[i], fam)
		if len(own[i].Endpoints) == 0 {
			return deaf, fmt.Errorf("EndpointSlice %s/%s: %w: %s", mw.Namespace, own[i].Name, errDoormanNotListening, strings.Join(deaf, ", "))
		}
	}
	return deaf, nil
}

// persistedRoutes are the workload's routes as last persisted, read past
// the cache: a caller's copy can be older than the status a Route just
// before wrote (the routing controller and the pause/wake reconciler both
// call Route, and a forwarder's changes kick it often), and allocating
// from it would give every route a new port. The caller's copy when the
// read fails.
// toCheck is the ports whose listening is checked: the new ones, and
// every one after a failed attempt, whose ports went into status unchecked
// or failed the check (else the retry would write the slice to a doorman
// still not listening).
func toCheck(mw *napwakev1alpha1.ManagedWorkload, routes, old []napwakev1alpha1.Route) map[int32]bool {
	if c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest); c != nil && c.Reason == napwakev1alpha1.ReasonRoutingFailed {
		return newPorts(routes, nil)
	}
	return newPorts(routes, old)
}

func (r *Router) persistedRoutes(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) []napwakev1alpha1.Route {
	fresh := &napwakev1alpha1.ManagedWorkload{}
	if err := r.reader.Get(ctx, client.ObjectKeyFromObject(mw), fresh); err != nil || fresh.UID != mw.UID {
		return routesOf(mw)
	}
	return routesOf(fresh)
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
		// Soon again: the workload wakes anyway, and its next reconcile
		// takes the routes left in status down (decide's RoutesLeft).
		return r.opts.RetryMin, err
	}
	if r.forwarderOn() {
		if err := r.retireForwarder(ctx, mw.Namespace, forwarder.Name(mw.Name)); err != nil {
			return r.opts.RetryMin, err
		}
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
	named := portsNamed(mw) // before takeDown's write drops expired holds from mw
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
	for p := range portsNamed(mw) {
		named[p] = true
	}
	if err := r.dropClaims(ctx, mw, named); err != nil {
		return false, r.opts.RetryMin, err
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
		// Proposed only: the allocator releases them once the status
		// without them is written (patchStatus settles it).
		r.mu.Lock()
		released = r.alloc.Giving(keyOf(mw), nil, r.clock.Now().Add(r.opts.PortHold))
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
