package controller

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing"
)

// The real Router beside the reconciler, against the API server: the
// doorman is one Ready pod in the test's namespace (its Service's slice),
// which always answers the Router's listening check, and the workload has
// one Service, api, selecting its pods.

// doormanService is the doorman's headless Service, in the test's namespace.
const doormanService = "doorman"

// realRouter sets up the doorman's slice and the api Service, and returns
// a Router making its writes through c, every doorman pod listening.
func (f *fixture) realRouter(c client.Client) *routing.Router {
	f.t.Helper()
	return f.realRouterWith(c, routing.Options{Dial: listening})
}

// realRouterWith is realRouter with opts (its DoormanService set here).
func (f *fixture) realRouterWith(c client.Client, opts routing.Options) *routing.Router {
	f.t.Helper()
	f.ensure(&discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: doormanService + "-ipv4", Labels: map[string]string{
			napwakev1alpha1.LabelServiceName:            doormanService,
			napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceControllerManager,
		}, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: doormanService, UID: "doorman-service-uid", Controller: ptr.To(true)}}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses: []string{"10.9.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: f.ns, Name: "doorman-a"},
		}},
	})
	f.ensure(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "api"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	})
	opts.DoormanService = f.ns + "/" + doormanService
	r, err := routing.New(c, k8s, opts, f.clock, f.events)
	must(f.t, err)
	return r
}

// ensure creates o unless it is there.
func (f *fixture) ensure(o client.Object) {
	f.t.Helper()
	if err := k8s.Create(f.ctx, o); client.IgnoreAlreadyExists(err) != nil {
		f.t.Fatal(err)
	}
}

// listening stands in for every doorman pod listening on every port.
func listening(context.Context, string, string) (net.Conn, error) {
	c, peer := net.Pipe()
	_ = peer.Close()
	return c, nil
}

// routed reads the workload's routes and its slices leading to the doorman.
func (f *fixture) routed() (routes []napwakev1alpha1.Route, slices []discoveryv1.EndpointSlice) {
	f.t.Helper()
	if d := f.managedWorkload().Status.Doorman; d != nil {
		routes = d.Routes
	}
	var list discoveryv1.EndpointSliceList
	must(f.t, k8s.List(f.ctx, &list, client.InNamespace(f.ns), client.MatchingLabels{napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager}))
	return routes, list.Items
}

// refusingDeletes is the real client whose next refuse EndpointSlice
// deletes fail and are not made.
type refusingDeletes struct {
	client.Client
	mu     sync.Mutex
	refuse int
}

func (c *refusingDeletes) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.mu.Lock()
	refuse := c.refuse > 0
	if _, slice := obj.(*discoveryv1.EndpointSlice); slice && refuse {
		c.refuse--
		c.mu.Unlock()
		return errCrash
	}
	c.mu.Unlock()
	return c.Client.Delete(ctx, obj, opts...)
}

// TestRoutesAWakeFailedToRemoveGoAtTheNextReconcile: at a wake the
// Router's removal of the slices fails; the wake goes on and Running is
// written, as a routing error never holds a wake up. The next reconcile of
// the Running workload takes the slices, routes and ports down, rather
// than leaving them until the next pause.
func TestRoutesAWakeFailedToRemoveGoAtTheNextReconcile(t *testing.T) {
	f := newFixture(t, 3)
	c := &refusingDeletes{Client: k8s}
	f.r = f.reconcilerWith(k8s, f.realRouter(c))
	f.runToRunning()
	f.pauseIt()
	if routes, slices := f.routed(); len(routes) != 1 || len(slices) != 1 {
		t.Fatalf("paused with routes %+v and %d slices, want 1 and 1", routes, len(slices))
	}
	port := f.managedWorkload().Status.Doorman.Routes[0].DoormanPort

	f.clock.Step(time.Minute)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
	f.reconcile() // Resuming, scaled up
	f.followSpec()
	c.mu.Lock()
	c.refuse = 1
	c.mu.Unlock()
	f.reconcile() // the removal fails; Running anyway
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhaseRunning {
		t.Fatalf("phase %q, want Running: a failed removal must not hold the wake up", p)
	}
	if routes, slices := f.routed(); len(routes) != 1 || len(slices) != 1 {
		t.Fatalf("the failed removal left routes %+v and %d slices, want 1 and 1 (else this test proves nothing)", routes, len(slices))
	}

	f.reconcile()
	routes, slices := f.routed()
	if len(routes) != 0 || len(slices) != 0 {
		t.Fatalf("Running with routes %+v and %d slices left, want none", routes, len(slices))
	}
	holds := f.managedWorkload().Status.Doorman.PortHolds
	if len(holds) != 1 || holds[0].Port != port || !holds[0].Until.Time.Equal(f.clock.Now().Add(time.Minute)) {
		t.Fatalf("port holds %+v, want port %d held for a minute", holds, port)
	}
}

// reconcilerWith is the test's reconciler, with rt as its Router.
func (f *fixture) reconcilerWith(c client.Client, rt Router) *ManagedWorkloadReconciler {
	r := f.reconciler(c)
	r.Router = rt
	return r
}

// crashRun is one run of the crash test: the fixture, and the operator
// (reconciler and real Router) making its writes through one crashing
// client until it dies, then a restarted one on the plain client.
type crashRun struct {
	f        *fixture
	crashing *crashingClient
	router   *routing.Router
	crashed  bool
}

func newCrashRun(t *testing.T, budget int) *crashRun {
	t.Helper()
	f := newFixture(t, 3)
	c := &crashRun{f: f, crashing: &crashingClient{Client: k8s, budget: budget}}
	c.router = f.realRouter(c.crashing)
	f.r = f.reconcilerWith(c.crashing, c.router)
	f.otherRoutedWorkload()
	return c
}

// settle checks the invariants after an operator call that returned err;
// if the operator died in it, it is restarted: a new reconciler and a new
// Router (its allocator seeded afresh from status) on the plain client.
func (c *crashRun) settle(err error) {
	c.f.t.Helper()
	switch {
	case c.crashing.dead && !c.crashed:
		c.crashed = true
		c.f.checkInvariants()
		c.router = c.f.realRouter(k8s)
		c.f.r = c.f.reconcilerWith(k8s, c.router)
	case err != nil:
		c.f.t.Fatalf("operator call: %v", err)
	}
	c.f.checkInvariants()
}

// reconcile is one reconcile, then the Deployment controller's part.
func (c *crashRun) reconcile() {
	c.f.t.Helper()
	_, err := c.f.r.Reconcile(c.f.ctx, reqFor(c.f))
	c.settle(err)
	c.f.followSpec()
	c.f.checkInvariants()
}

// reconcileAfterRestart is one reconcile, and if the operator died in
// it, the restarted one's first.
func (c *crashRun) reconcileAfterRestart() {
	c.f.t.Helper()
	died := c.crashed
	c.reconcile()
	if c.crashed != died {
		c.reconcile()
	}
}

func (c *crashRun) until(phase napwakev1alpha1.Phase) {
	c.f.t.Helper()
	for i := 0; i < 8 && c.f.managedWorkload().Status.Phase != phase; i++ {
		c.reconcile()
	}
	if p := c.f.managedWorkload().Status.Phase; p != phase {
		c.f.t.Fatalf("phase %q, want %q", p, phase)
	}
}

// moveDoorman replaces the Ready doorman pod with another, as a doorman
// rollout does, and has the Router move every routed slice to it, as its
// doorman pods controller does (a restarted one does so at start).
func (c *crashRun) moveDoorman() {
	f := c.f
	f.t.Helper()
	var s discoveryv1.EndpointSlice
	must(f.t, k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: doormanService + "-ipv4"}, &s))
	s.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.9.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: f.ns, Name: "doorman-b"}}}
	must(f.t, k8s.Update(f.ctx, &s))
	for range 2 { // once more if it died moving
		died := c.crashed
		c.settle(c.router.MoveAll(f.ctx, routing.DoormenFrom([]discoveryv1.EndpointSlice{s})))
		if c.crashed == died {
			break
		}
	}
	_, slices := f.routed()
	for _, sl := range slices {
		if len(sl.Endpoints) != 1 || sl.Endpoints[0].Addresses[0] != "10.9.0.2" {
			f.t.Fatalf("slice %s leads to %+v after the doorman moved, want 10.9.0.2", sl.Name, sl.Endpoints)
		}
	}
}

// TestNothingIsLostWhenTheOperatorAndItsRouterDieAfterAnyWrite runs a
// pause, two route moves (the doorman pod replaced; a Service port added
// while paused) and a wake with the real Router, letting the operator make
// only n API writes, its Router's EndpointSlice and status writes among
// them, before it dies, for every n up to the number the whole run takes.
// A restarted operator (a new Router, its port allocator seeded from
// status) carries on. After every step: never the target at 0 without a
// persisted pause saving its 3 replicas, never the api Service with its
// pods down and no doorman slice with a Ready endpoint, never a doorman
// port in two workloads' routes or one workload's routes and another's
// holds; and every run ends Running with 3 replicas, no route and no slice.
// This is envtest, a real kube-apiserver and etcd with the real Router,
// standing in for the local cluster.
func TestNothingIsLostWhenTheOperatorAndItsRouterDieAfterAnyWrite(t *testing.T) {
	for cp := newCrashPoints(); cp.next(); {
		cp.failed(t.Run(cp.name(), func(t *testing.T) {
			c := newCrashRun(t, cp.n)
			f := c.f
			c.until(napwakev1alpha1.PhaseRunning)
			f.clock.Step(11 * time.Minute)
			c.until(napwakev1alpha1.PhasePaused)
			c.moveDoorman()
			f.addServicePort()
			c.reconcileAfterRestart() // Paused: routed afresh, the new port too
			if routes, _ := f.routed(); len(routes) != 2 {
				t.Fatalf("routes %+v after a Service port was added while paused, want 2", routes)
			}
			f.clock.Step(time.Minute)
			f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
			c.until(napwakev1alpha1.PhaseRunning)
			c.reconcileAfterRestart() // routes a failed removal left go now
			if got := replicasOf(f.deployment().Spec.Replicas); got != 3 {
				t.Fatalf("ended with %d replicas, want 3", got)
			}
			if routes, slices := f.routed(); len(routes) != 0 || len(slices) != 0 {
				t.Fatalf("ended Running with routes %+v and %d slices, want none", routes, len(slices))
			}
			cp.ran(t, c.crashing.writes, c.crashed)
		}))
	}
}

// addServicePort gives the api Service a second port, grpc 81.
func (f *fixture) addServicePort() {
	f.t.Helper()
	var svc corev1.Service
	must(f.t, k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "api"}, &svc))
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "grpc", Port: 81, Protocol: corev1.ProtocolTCP})
	must(f.t, k8s.Update(f.ctx, &svc))
}

// otherRoutedWorkload records another paused workload's route in the
// namespace, at the allocator's first port: a Router seeded from status
// must never hand it out again.
func (f *fixture) otherRoutedWorkload() {
	f.t.Helper()
	mw := &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "other"},
		Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "other"}},
	}
	must(f.t, k8s.Create(f.ctx, mw))
	base := mw.DeepCopy()
	mw.Status.Phase = napwakev1alpha1.PhasePaused
	mw.Status.Doorman = &napwakev1alpha1.DoormanStatus{Routes: []napwakev1alpha1.Route{{
		Service: "other", PortName: "http", Port: 80, DoormanPort: napwakev1alpha1.DoormanPortMin, IPFamilies: []napwakev1alpha1.IPFamily{napwakev1alpha1.IPFamily(corev1.IPv4Protocol)},
	}}}
	must(f.t, k8s.Status().Patch(f.ctx, mw, client.MergeFrom(base)))
}

// checkInvariants fails on what no crash may leave behind (see
// TestNothingIsLostWhenTheOperatorAndItsRouterDieAfterAnyWrite).
func (f *fixture) checkInvariants() {
	f.t.Helper()
	f.checkWakeable()
	if f.deployment().Status.ReadyReplicas == 0 {
		_, slices := f.routed()
		if !readyEndpointFor("api", slices) {
			f.t.Fatalf("the api Service's pods are down and no doorman slice leads anywhere: %+v", slices)
		}
	}
	var list napwakev1alpha1.ManagedWorkloadList
	must(f.t, k8s.List(f.ctx, &list, client.InNamespace(f.ns)))
	claimed := map[int32]string{}
	for _, mw := range list.Items {
		for _, rt := range routesOf(&mw) {
			if by, twice := claimed[rt.DoormanPort]; twice {
				f.t.Fatalf("doorman port %d routed by both %s and %s", rt.DoormanPort, by, mw.Name)
			}
			claimed[rt.DoormanPort] = mw.Name
		}
	}
	for _, mw := range list.Items {
		if mw.Status.Doorman == nil {
			continue
		}
		for _, h := range mw.Status.Doorman.PortHolds {
			if by, ok := claimed[h.Port]; ok && by != mw.Name && h.Until.After(f.clock.Now()) {
				f.t.Fatalf("doorman port %d routed by %s while %s holds it", h.Port, by, mw.Name)
			}
		}
	}
}

func routesOf(mw *napwakev1alpha1.ManagedWorkload) []napwakev1alpha1.Route {
	if mw.Status.Doorman == nil {
		return nil
	}
	return mw.Status.Doorman.Routes
}

func readyEndpointFor(service string, slices []discoveryv1.EndpointSlice) bool {
	for _, s := range slices {
		if s.Labels[napwakev1alpha1.LabelServiceName] != service {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				return true
			}
		}
	}
	return false
}
