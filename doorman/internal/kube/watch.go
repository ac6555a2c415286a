package kube

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/addr"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/shared/rewatch"
)

// RouteSink is where the watcher sends the routes; *proxy.Server is one.
type RouteSink interface {
	SetRoutes([]proxy.Route) map[int]error
	// ClosePorts stops serving ports now: ports in conflict.
	ClosePorts([]int)
}

var _ RouteSink = (*proxy.Server)(nil)

// Watcher keeps the proxy's routes and Ready endpoints up to date from
// informers. Every change marks its namespace dirty; one loop recomputes
// the dirty namespaces' endpoints and, after a ManagedWorkload change, the
// routes, so a held connection moves as soon as the watch shows a Ready pod.
type Watcher struct {
	cache cache.Cache
	table *proxy.Table
	sink  RouteSink
	rules addr.Rules

	mu         sync.Mutex
	dirty      map[string]bool // namespaces
	routesDirt bool
	kick       chan struct{}
	routes     []proxy.Route
	// gone is when each known key stopped being routed: it stays watched
	// while its port lingers and drains, then it is forgotten.
	gone map[proxy.ServiceKey]time.Time
	// now tells the time; tests may replace it.
	now func() time.Time
	// synced is closed once a sync has set routes with every port
	// listening (Synced).
	synced     chan struct{}
	syncedOnce sync.Once
	// warned is the conflict last warned about on each doorman port.
	warned map[int]string
	// OnConflict, when set, is told of each new route conflict once.
	OnConflict func(ctx context.Context, c Conflict)
	known      map[proxy.ServiceKey][]netip.AddrPort
}

// NewCache returns the informer cache the doorman needs: ManagedWorkloads,
// and EndpointSlices the EndpointSlice controller manages, Services and
// Pods, each trimmed to what FilterEndpoints and PodEndpoints read. Its
// informers come back within about a second of an API server outage's end
// (shared/rewatch); log hears of outages.
func NewCache(cfg *rest.Config, scheme *runtime.Scheme, log logr.Logger) (cache.Cache, error) {
	managed, err := labels.NewRequirement(napwakev1alpha1.LabelEndpointSliceManagedBy, selection.Equals, []string{napwakev1alpha1.EndpointSliceControllerManager})
	if err != nil {
		return nil, fmt.Errorf("building the EndpointSlice selector: %w", err)
	}
	return cache.New(cfg, cache.Options{
		Scheme:      scheme,
		NewInformer: rewatch.NewInformer(log),
		ByObject: map[client.Object]cache.ByObject{
			&discoveryv1.EndpointSlice{}: {Label: labels.NewSelector().Add(*managed), Transform: trimEndpointSlice},
			&corev1.Pod{}:                {Transform: trimPod},
			&corev1.Service{}:            {Transform: trimService},
		},
	})
}

// trimPod keeps only what FilterEndpoints and PodEndpoints read of a Pod:
// its identity, labels and deletion timestamp, its containers' (and
// restartable init containers') names and ports, its phase, addresses and
// Ready condition (type and status). A cluster's Pods are many, and the
// doorman needs nothing else of them.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: p.Labels,
			ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp},
		Spec: corev1.PodSpec{Containers: trimContainers(p.Spec.Containers, false),
			InitContainers: trimContainers(p.Spec.InitContainers, true)},
		Status: corev1.PodStatus{Phase: p.Status.Phase, PodIPs: p.Status.PodIPs, PodIP: p.Status.PodIP},
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
			break
		}
	}
	return out, nil
}

// trimContainers keeps each container's name and ports (name, number,
// protocol); of init containers, only those restarted as sidecars, whose
// ports a Service may name, with their restart policy.
func trimContainers(cs []corev1.Container, init bool) []corev1.Container {
	var out []corev1.Container
	for _, c := range cs {
		if init && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
			continue
		}
		t := corev1.Container{Name: c.Name}
		if init {
			t.RestartPolicy = c.RestartPolicy
		}
		for _, cp := range c.Ports {
			t.Ports = append(t.Ports, corev1.ContainerPort{Name: cp.Name, ContainerPort: cp.ContainerPort, Protocol: cp.Protocol})
		}
		out = append(out, t)
	}
	return out
}

// trimService keeps only what PodEndpoints reads of a Service: its
// identity, type, selector, IP families and each port's name, protocol,
// number and targetPort.
func trimService(obj any) (any, error) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	out := &corev1.Service{
		TypeMeta:   s.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion},
		Spec:       corev1.ServiceSpec{Type: s.Spec.Type, Selector: s.Spec.Selector, IPFamilies: s.Spec.IPFamilies},
	}
	for _, p := range s.Spec.Ports {
		out.Spec.Ports = append(out.Spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, TargetPort: p.TargetPort})
	}
	return out, nil
}

// trimEndpointSlice keeps only what FilterEndpoints and the cache's
// lookups read of an EndpointSlice: its identity, the managed-by and
// service-name labels, its controller owner reference, address type, each
// port's name, number and protocol, and each endpoint's addresses, ready
// and terminating conditions and targetRef (kind, namespace, name, uid).
// Every Service's slices in the cluster are cached, and their other
// fields (managed fields, topology, hints, node names) are most of them.
func trimEndpointSlice(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	out := &discoveryv1.EndpointSlice{
		TypeMeta:    s.TypeMeta,
		ObjectMeta:  metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion},
		AddressType: s.AddressType,
	}
	for _, k := range []string{discoveryv1.LabelManagedBy, discoveryv1.LabelServiceName} {
		if v, ok := s.Labels[k]; ok {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	for _, o := range s.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			out.OwnerReferences = []metav1.OwnerReference{{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, Controller: o.Controller}}
			break
		}
	}
	if len(s.Ports) > 0 {
		out.Ports = make([]discoveryv1.EndpointPort, len(s.Ports))
		for i, p := range s.Ports {
			out.Ports[i] = discoveryv1.EndpointPort{Name: p.Name, Port: p.Port, Protocol: p.Protocol}
		}
	}
	if len(s.Endpoints) > 0 {
		out.Endpoints = make([]discoveryv1.Endpoint, len(s.Endpoints))
		for i, e := range s.Endpoints {
			t := discoveryv1.Endpoint{Addresses: e.Addresses,
				Conditions: discoveryv1.EndpointConditions{Ready: e.Conditions.Ready, Terminating: e.Conditions.Terminating}}
			if r := e.TargetRef; r != nil {
				t.TargetRef = &corev1.ObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
			}
			out.Endpoints[i] = t
		}
	}
	return out, nil
}

// NewWatcher returns a watcher feeding table and sink from c.
func NewWatcher(c cache.Cache, table *proxy.Table, sink RouteSink, rules addr.Rules) *Watcher {
	return &Watcher{cache: c, table: table, sink: sink, rules: rules,
		dirty: map[string]bool{}, kick: make(chan struct{}, 1), known: map[proxy.ServiceKey][]netip.AddrPort{}, warned: map[int]string{},
		gone: map[proxy.ServiceKey]time.Time{}, now: time.Now, synced: make(chan struct{})}
}

// Synced is closed once the watcher has set the routes of every
// ManagedWorkload it saw at start, and the doorman listens on each of
// their ports: a doorman is Ready only then
// (docs/design/security.md#a-doorman-is-ready-only-when-it-listens), or a
// pod added to the slices would refuse connections until it caught up.
func (w *Watcher) Synced() <-chan struct{} { return w.synced }

// forgetAfter is how long a key no route names any more stays watched:
// its port's linger and drain (30 s and 5 min), and a margin.
const forgetAfter = 6 * time.Minute

// forgetGone drops the keys no route has named for forgetAfter, from the
// watch and the table, so preview environments that come and go leave
// nothing behind. routes are the current routes.
func (w *Watcher) forgetGone(routes []proxy.Route) {
	now := w.now()
	routed := make(map[proxy.ServiceKey]bool, len(routes))
	for _, r := range routes {
		routed[r.Key()] = true
	}
	for k := range w.known {
		switch {
		case routed[k]:
			delete(w.gone, k)
		case w.gone[k].IsZero():
			w.gone[k] = now
		case now.Sub(w.gone[k]) >= forgetAfter:
			delete(w.known, k)
			delete(w.gone, k)
			w.table.SetEndpoints(k, nil)
		}
	}
}

// warnConflicts tells OnConflict of each conflict not already told, and
// forgets the ports no longer in conflict, so a conflict that comes back is
// told again.
func (w *Watcher) warnConflicts(ctx context.Context, conflicts []Conflict) {
	now := make(map[int]string, len(conflicts))
	for _, c := range conflicts {
		k := c.key()
		now[c.DoormanPort] = k
		if w.warned[c.DoormanPort] != k && w.OnConflict != nil {
			w.OnConflict(ctx, c)
		}
	}
	w.warned = now
}

// Run registers the event handlers, waits for the caches and keeps the
// proxy up to date until ctx ends. The cache must be started separately.
func (w *Watcher) Run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithName("watch")
	for _, obj := range []client.Object{&napwakev1alpha1.ManagedWorkload{}, &discoveryv1.EndpointSlice{}, &corev1.Pod{}, &corev1.Service{}} {
		inf, err := w.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("getting the %T informer: %w", obj, err)
		}
		_, isMW := obj.(*napwakev1alpha1.ManagedWorkload)
		if _, err := inf.AddEventHandler(w.handler(isMW)); err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	if !w.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("waiting for the informer caches: %w", ctx.Err())
	}
	w.markRoutes()
	// A sync a minute forgets keys gone long enough even when nothing
	// changes.
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.kick:
		case <-tick.C:
		}
		if err := w.sync(ctx); err != nil {
			log.Error(err, "Syncing routes and endpoints")
		}
	}
}

func (w *Watcher) handler(isMW bool) toolscache.ResourceEventHandler {
	mark := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		o, ok := obj.(client.Object)
		if !ok {
			return
		}
		w.mu.Lock()
		w.dirty[o.GetNamespace()] = true
		if isMW {
			w.routesDirt = true
		}
		w.mu.Unlock()
		w.poke()
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { mark(obj) },
		UpdateFunc: func(_, obj any) { mark(obj) },
		DeleteFunc: mark,
	}
}

func (w *Watcher) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *Watcher) markRoutes() {
	w.mu.Lock()
	w.routesDirt = true
	w.mu.Unlock()
	w.poke()
}

func (w *Watcher) sync(ctx context.Context) error {
	w.mu.Lock()
	dirty, routesDirt := w.dirty, w.routesDirt
	w.dirty, w.routesDirt = map[string]bool{}, false
	w.mu.Unlock()

	if routesDirt {
		var mws napwakev1alpha1.ManagedWorkloadList
		if err := w.cache.List(ctx, &mws); err != nil {
			w.markRoutes()
			return fmt.Errorf("listing ManagedWorkloads: %w", err)
		}
		routes, conflicts := Routes(mws.Items)
		w.mu.Lock()
		w.routes = routes
		w.mu.Unlock()
		w.warnConflicts(ctx, conflicts)
		ports := make([]int, len(conflicts))
		for i, c := range conflicts {
			ports[i] = c.DoormanPort
		}

		// Endpoints first, so a connection on a new port finds them.
		for _, r := range routes {
			dirty[r.Workload.Namespace] = true
		}
		defer func() {
			// The routes are set, then the conflicting ports, which no
			// route names any more, close. Once every port of the first
			// routes listens, the doorman is synced: Ready.
			failed := w.sink.SetRoutes(routes)
			w.sink.ClosePorts(ports)
			if len(failed) == 0 {
				w.syncedOnce.Do(func() { close(w.synced) })
			}
		}()
	}
	w.mu.Lock()
	routes := w.routes
	w.mu.Unlock()
	w.forgetGone(routes)
	// Keys of routes gone stay watched: their ports linger and drain.
	keys := make([]proxy.ServiceKey, 0, len(routes)+len(w.known))
	for _, r := range routes {
		keys = append(keys, r.Key())
	}
	for k := range w.known {
		keys = append(keys, k)
	}
	seen := map[proxy.ServiceKey]bool{}
	for _, k := range keys {
		if seen[k] || !dirty[k.Namespace] {
			continue
		}
		seen[k] = true
		eps, err := w.endpoints(ctx, k)
		if err != nil {
			return err
		}
		if !slices.Equal(w.known[k], eps) {
			w.known[k] = eps
			w.table.SetEndpoints(k, eps)
		}
	}
	return nil
}

// endpoints are k's Ready addresses: those of its EndpointSlices, and
// those of its Service's Pods Ready by their own status, which come first
// (PodEndpoints).
func (w *Watcher) endpoints(ctx context.Context, k proxy.ServiceKey) ([]netip.AddrPort, error) {
	var list discoveryv1.EndpointSliceList
	if err := w.cache.List(ctx, &list, client.InNamespace(k.Namespace), client.MatchingLabels{napwakev1alpha1.LabelServiceName: k.Service}); err != nil {
		return nil, fmt.Errorf("listing EndpointSlices of %s/%s: %w", k.Namespace, k.Service, err)
	}
	slicesOf := make([]*discoveryv1.EndpointSlice, len(list.Items))
	for i := range list.Items {
		slicesOf[i] = &list.Items[i]
	}
	pod := func(name string) *corev1.Pod {
		var p corev1.Pod
		if err := w.cache.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: name}, &p); err != nil {
			return nil
		}
		return &p
	}
	fromSlices := FilterEndpoints(slicesOf, pod, k.Namespace, k.Service, k.PortName, w.rules)
	fromPods, err := w.podEndpoints(ctx, k)
	if err != nil {
		return nil, err
	}
	return MergeEndpoints(fromSlices, fromPods), nil
}

// podEndpoints lists the Pods of k's Service's namespace its selector
// selects and keeps those PodEndpoints allows.
func (w *Watcher) podEndpoints(ctx context.Context, k proxy.ServiceKey) ([]netip.AddrPort, error) {
	var svc corev1.Service
	if err := w.cache.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Service}, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting Service %s/%s: %w", k.Namespace, k.Service, err)
	}
	if len(svc.Spec.Selector) == 0 {
		return nil, nil // its EndpointSlices alone say where it goes
	}
	var list corev1.PodList
	if err := w.cache.List(ctx, &list, client.InNamespace(k.Namespace),
		client.MatchingLabelsSelector{Selector: labels.SelectorFromValidatedSet(svc.Spec.Selector)}); err != nil {
		return nil, fmt.Errorf("listing the Pods of %s/%s: %w", k.Namespace, k.Service, err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return PodEndpoints(&svc, pods, k.PortName, w.rules), nil
}

// WorkloadOf reads what the doorman needs of a ManagedWorkload.
func WorkloadOf(mw *napwakev1alpha1.ManagedWorkload) proxy.Workload {
	w := proxy.Workload{
		Namespace: mw.Namespace, Name: mw.Name,
		Ask:   mw.Spec.Wake.Mode == napwakev1alpha1.WakeAsk,
		Page:  mw.Spec.Wake.Page == nil || *mw.Spec.Wake.Page,
		Phase: string(mw.Status.Phase),
	}
	if mw.Spec.Wake.MaxWait != nil {
		w.MaxWait = min(mw.Spec.Wake.MaxWait.Duration, napwakev1alpha1.MaxMaxWait)
	}
	if mw.Status.Pause != nil {
		w.PausedAt = mw.Status.Pause.StartedAt.Time
	}
	if mw.Status.ResumedAt != nil {
		w.ResumedAt = mw.Status.ResumedAt.Time
	}
	w.LastRequest = lastRequest(mw)
	w.PauseUntil = annotationTime(mw, napwakev1alpha1.AnnotationPauseUntil)
	w.KeepAwakeUntil = annotationTime(mw, napwakev1alpha1.AnnotationKeepAwakeUntil)
	return w
}

// annotationTime reads an RFC 3339 annotation of mw, as the operator does;
// zero when unset or unreadable.
func annotationTime(mw *napwakev1alpha1.ManagedWorkload, key string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, mw.Annotations[key])
	if err != nil {
		return time.Time{}
	}
	return t
}
