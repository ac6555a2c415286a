package routing

import (
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing/plan"
)

// TestWakeHoldsThePortAcrossARestart: at a wake the slices go, the port is
// held for a minute in status, and no other route takes it, also from a
// new Router (an operator restart or a new leader), until the minute is over.
func TestWakeHoldsThePortAcrossARestart(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	f.service("api")
	mw := f.pausing("api")
	r := f.router(func(o *Options) { o.PortsPerWorkload, o.PortsPerNamespace = 1, 1 })
	_, err := r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	port := mw.Status.Doorman.Routes[0].DoormanPort

	_, err = r.Unroute(f.ctx, mw)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(f.slices()).To(BeEmpty(), "the slices go at the wake")
	got := f.get(mw)
	f.g.Expect(got.Status.Doorman.Routes).To(BeEmpty())
	f.g.Expect(got.Status.Doorman.PortHolds).To(HaveLen(1))
	f.g.Expect(got.Status.Doorman.PortHolds[0].Port).To(Equal(port))
	f.g.Expect(got.Status.Doorman.PortHolds[0].Until.Time).To(BeTemporally("==", f.clock.Now().Add(time.Minute)))
	c := wakeOnRequest(got)
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonNotPaused))
	f.g.Expect(c.Message).To(Equal(plan.MessageNotPaused))

	// A new Router, seeded from statuses, with a one-port range left:
	// force the allocator to the held port by filling the rest.
	fresh := f.router()
	f.g.Expect(fresh.seed(f.ctx)).To(Succeed())
	f.g.Expect(fresh.alloc.HeldUntil(port, f.clock.Now())).To(BeTemporally("==", f.clock.Now().Add(time.Minute)), "the hold survives a restart")
	other := f.pausing("web")
	f.service("web", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })
	webTmpl := template(true)
	webTmpl.Labels = map[string]string{"app": "web"}
	for range 3 { // whatever the cursor, the held port is never handed out
		_, err = fresh.Route(f.ctx, other, webTmpl)
		f.g.Expect(err).NotTo(HaveOccurred())
		f.g.Expect(other.Status.Doorman.Routes).To(HaveLen(1))
		f.g.Expect(other.Status.Doorman.Routes[0].DoormanPort).NotTo(Equal(port))
	}

	// Finalize waits for the hold, then is done.
	done, after, err := fresh.Finalize(f.ctx, got)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(done).To(BeFalse())
	f.g.Expect(after).To(Equal(time.Minute))
	f.clock.Step(time.Minute)
	done, _, err = fresh.Finalize(f.ctx, got)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(done).To(BeTrue())
	f.g.Expect(f.get(got).Status.Doorman).To(BeNil(), "expired holds leave status")
	claimOf := func(p int32) error {
		return k8s.Get(f.ctx, client.ObjectKey{Namespace: doormanNS, Name: claimPrefix + strconv.Itoa(int(p))}, &coordinationv1.Lease{})
	}
	f.g.Expect(apierrors.IsNotFound(claimOf(port))).To(BeTrue(), "the deleted workload's claim on its port goes with it")
	f.g.Expect(claimOf(f.get(other).Status.Doorman.Routes[0].DoormanPort)).To(Succeed(), "another workload's claim stays")
}

// TestUnrouteCarriesOverAProblem: a problem with the Services found at the
// pause stays on the condition while awake, "at its last pause: ...".
func TestUnrouteCarriesOverAProblem(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.service("api", func(s *corev1.Service) {
		s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
	})
	mw := f.pausing("api")
	r := f.router()
	_, err := r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Unroute(f.ctx, mw)
	f.g.Expect(err).NotTo(HaveOccurred())
	c := wakeOnRequest(f.get(mw))
	f.g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonNodeLocalTraffic))
	f.g.Expect(c.Message).To(HavePrefix(napwakev1alpha1.CarriedOverPrefix + "no Service is routed: api (internalTrafficPolicy: Local)"))
}

// TestASliceOwnedBySomeoneElseIsNeverOverwritten: RoutingFailed, a warning
// event, and retries backing off from 5 s to 5 min.
func TestASliceOwnedBySomeoneElseIsNeverOverwritten(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	f.service("api")
	theirs := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "api-napwake-ipv4", Namespace: f.ns, Labels: map[string]string{"kubernetes.io/service-name": "api", "endpointslice.kubernetes.io/managed-by": "someone-else"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}},
	}
	f.create(theirs)
	mw := f.pausing("api")
	r := f.router()
	var waits []time.Duration
	for range 8 {
		after, err := r.Route(f.ctx, mw, template(true))
		f.g.Expect(err).To(MatchError(ContainSubstring("never overwritten")))
		waits = append(waits, after)
	}
	f.g.Expect(waits).To(Equal([]time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}))
	c := wakeOnRequest(f.get(mw))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonRoutingFailed))
	f.g.Expect(c.Message).To(ContainSubstring(`EndpointSlice ` + f.ns + `/api-napwake-ipv4 (managed by "someone-else"`))
	s, err := f.slice("api-napwake-ipv4")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(endpointIPs(s)).To(Equal([]string{"10.9.9.9"}), "their slice is untouched")
	f.g.Eventually(func() []string { return f.eventReasons(mw) }).Should(ContainElement("RoutingFailed/Warning"))

	// Once it is gone, the next retry routes, and the backoff starts over.
	f.g.Expect(k8s.Delete(f.ctx, theirs)).To(Succeed())
	after, err := r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(after).To(BeZero())
	f.g.Expect(wakeOnRequest(f.get(mw)).Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))
}

// TestADoormanThatDoesNotListenGetsNoSlice: the connection check gates the
// slices.
func TestADoormanThatDoesNotListenGetsNoSlice(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true}, doormanPod{"doorman-b", "10.1.0.2", true})
	f.pods.serve(f.ctx, "10.1.0.1") // doorman-b never listens
	f.service("api")
	mw := f.pausing("api")
	after, err := f.router(func(o *Options) { o.ListenTimeout = 300 * time.Millisecond }).Route(f.ctx, mw, template(true))
	f.g.Expect(err).To(MatchError(ContainSubstring("is not listening")))
	f.g.Expect(after).To(Equal(5 * time.Second))
	f.g.Expect(f.slices()).To(BeEmpty())
	c := wakeOnRequest(f.get(mw))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonRoutingFailed))
	f.g.Expect(routesOf(f.get(mw))).To(HaveLen(1), "the route and its port stay for the retry")
}

// TestServedByOtherPods: a Service whose own EndpointSlices show another
// workload's Ready pod isn't routed, and is decided again within 30 s; the
// workload's own Ready pods (it is still pausing) don't count.
func TestServedByOtherPods(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	f.service("api")
	pod := func(name string, labels map[string]string) {
		f.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
	}
	pod("api-own", map[string]string{"app": "api", "track": "stable", "pod-template-hash": "abc"})
	pod("api-canary", map[string]string{"app": "api", "track": "canary"})
	own := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "api-abcde", Namespace: f.ns, Labels: map[string]string{
			"kubernetes.io/service-name": "api", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.2.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "api-own"}},
			{Addresses: []string{"10.2.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "api-canary"}},
		},
	}
	f.create(own)
	mw := f.pausing("api")
	r := f.router()
	after, err := r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(wakeOnRequest(f.get(mw)).Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted), "its own Ready pod and a not-Ready canary don't count")
	f.g.Expect(after).To(BeZero())

	own.Endpoints[1].Conditions.Ready = ptr.To(true)
	f.g.Expect(k8s.Update(f.ctx, own)).To(Succeed())
	after, err = r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	c := wakeOnRequest(f.get(mw))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonServedByOtherPods))
	f.g.Expect(c.Message).To(ContainSubstring("api (another workload's Ready pods serve it)"))
	f.g.Expect(after).To(Equal(30*time.Second), "decided again in 30 s")
	f.g.Expect(f.slices()).To(BeEmpty(), "not routed while the canary serves it")
}

// TestNamespaceDeletedWhilePaused: in a terminating namespace a new slice
// is refused (RoutingFailed, a clear message); Finalize then leaves no
// slice behind. (envtest runs no namespace controller, so the namespace
// stays Terminating and its objects stay until deleted.)
func TestNamespaceDeletedWhilePaused(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	f.service("api")
	f.service("web")
	mw := f.pausing("api")
	r := f.router()
	_, err := r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(f.slices()).To(HaveLen(2))

	f.g.Expect(k8s.Delete(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}})).To(Succeed())
	f.g.Expect(k8s.Delete(f.ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-napwake-ipv4", Namespace: f.ns}})).To(Succeed())
	_, err = r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).To(MatchError(ContainSubstring("being terminated")))
	c := wakeOnRequest(f.get(mw))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonRoutingFailed))
	f.g.Expect(c.Message).To(ContainSubstring("creating EndpointSlice " + f.ns + "/web-napwake-ipv4"))

	done, _, err := r.Finalize(f.ctx, mw)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(done).To(BeFalse(), "its ports are held for a minute")
	f.g.Expect(f.slices()).To(BeEmpty(), "no orphaned slice")
	f.clock.Step(time.Minute)
	done, _, err = r.Finalize(f.ctx, mw)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(done).To(BeTrue())
	f.g.Expect(strings.Join(sliceNames(f.slices()), ",")).To(BeEmpty())
}

// TestTwoPausedWorkloadsBehindOneServiceShareItsRoute: "Every workload is
// paused: the Service is routed, and a request wakes them". The first to
// pause writes the Service's slice; the second keeps its own route and port
// (the doorman wakes every workload routed for a Service port), reports
// DoormanRouted naming the one whose route it shares, raises no
// RoutingFailed, and is decided again within 30 s and as soon as the other
// wakes: once the other's slice goes while it is still paused, it routes
// the Service itself.
func TestTwoPausedWorkloadsBehindOneServiceShareItsRoute(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	f.service("api")
	stable, canary := f.pausing("api-stable"), f.pausing("api-canary")
	r := f.router()

	after, err := r.Route(f.ctx, stable, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(after).To(BeZero())
	s, err := f.slice("api-napwake-ipv4")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(s.Labels[napwakev1alpha1.LabelWorkload]).To(Equal("api-stable"))
	stablePort := *s.Ports[0].Port

	after, err = r.Route(f.ctx, canary, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(after).To(Equal(30*time.Second), "decided again, to take over if the other's slice goes")
	c := wakeOnRequest(f.get(canary))
	f.g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))
	f.g.Expect(c.Message).To(ContainSubstring("a request wakes each of them that wakes on request (one that asks wakes only on a click): api through ManagedWorkload api-stable's route"))
	routes := routesOf(f.get(canary))
	f.g.Expect(routes).To(HaveLen(1))
	f.g.Expect(routes[0].Service).To(Equal("api"))
	f.g.Expect(routes[0].DoormanPort).NotTo(Equal(stablePort), "each keeps a port of its own")
	s, err = f.slice("api-napwake-ipv4")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(s.Labels[napwakev1alpha1.LabelWorkload]).To(Equal("api-stable"), "the first one's slice is untouched")
	f.g.Expect(*s.Ports[0].Port).To(Equal(stablePort))
	f.g.Consistently(func() []string { return f.eventReasons(canary) }, "300ms").ShouldNot(ContainElement("RoutingFailed/Warning"))

	// The stable one wakes and its slice goes; the canary, still paused,
	// routes the Service itself at its next decision.
	_, err = r.Unroute(f.ctx, f.get(stable))
	f.g.Expect(err).NotTo(HaveOccurred())
	select {
	case ev := <-r.kick:
		f.g.Expect(ev.Object.GetName()).To(Equal("api-canary"), "the one sharing its Service is decided again at once")
	default:
		t.Fatal("the canary, behind the same Service, was not decided again once the stable one woke")
	}
	after, err = r.Route(f.ctx, f.get(canary), template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(after).To(BeZero())
	s, err = f.slice("api-napwake-ipv4")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(s.Labels[napwakev1alpha1.LabelWorkload]).To(Equal("api-canary"))
	f.g.Expect(*s.Ports[0].Port).To(Equal(routes[0].DoormanPort))
	f.g.Expect(wakeOnRequest(f.get(canary)).Message).NotTo(ContainSubstring("shared"))

	// The awake workload's Ready pods reach the Service's own EndpointSlice
	// only after that first decision; 30 s after the wake the canary is
	// decided again, finds them and takes its slice down.
	select {
	case ev := <-r.kick:
		t.Fatalf("%s decided again before the 30 s", ev.Object.GetName())
	default:
	}
	f.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-woken", Namespace: f.ns, Labels: map[string]string{"app": "api", "track": "canary"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
	f.create(&discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "api-abcde", Namespace: f.ns, Labels: map[string]string{
			"kubernetes.io/service-name": "api", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.2.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "api-woken"}}},
	})
	f.clock.Step(30 * time.Second)
	var again string
	f.g.Eventually(func() string {
		select {
		case ev := <-r.kick:
			again = ev.Object.GetName()
		default:
		}
		return again
	}).Should(Equal("api-canary"), "the canary is decided again 30 s after the other woke")
	after, err = r.Route(f.ctx, f.get(canary), template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(wakeOnRequest(f.get(canary)).Reason).To(Equal(napwakev1alpha1.ReasonServedByOtherPods))
	f.g.Expect(after).To(Equal(30 * time.Second))
	f.g.Expect(f.slices()).To(BeEmpty(), "no doorman slice while the woken pods serve the Service")
}
