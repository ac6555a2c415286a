package routing

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// conditions are an endpoint's: nil leaves a condition unset.
type conditions struct{ ready, terminating *bool }

func doormanSlice(eps map[string]conditions) discoveryv1.EndpointSlice {
	s := discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4}
	for ip, c := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: c.ready, Terminating: c.terminating}})
	}
	return s
}

func TestDoormenFromTakesOnlyReadyPodsThatAreNotTerminating(t *testing.T) {
	yes, no := ptr.To(true), ptr.To(false)
	for _, tc := range []struct {
		name string
		c    conditions
		want bool
	}{
		{"a Ready pod is taken", conditions{yes, no}, true},
		{"a Ready pod whose terminating condition is unset is taken", conditions{yes, nil}, true},
		{"an endpoint with no conditions is taken, as the API says unset ready means ready", conditions{nil, nil}, true},
		{"a pod that is not Ready is left out", conditions{no, no}, false},
		{"a Ready pod that is terminating is left out (a Service publishing not-ready addresses keeps it Ready)", conditions{yes, yes}, false},
		{"a terminating pod whose ready condition is unset is left out", conditions{nil, yes}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DoormenFrom([]discoveryv1.EndpointSlice{doormanSlice(map[string]conditions{"10.1.0.1": tc.c})})
			if (len(got) == 1) != tc.want {
				t.Fatalf("DoormenFrom = %+v, want taken %v", got, tc.want)
			}
		})
	}
}

// markTerminating sets the terminating condition of the doorman endpoint
// at ip, leaving its ready condition as it is: what the EndpointSlice
// controller shows of a stopping pod behind a Service that publishes
// not-ready addresses.
func (f *fixture) markTerminating(ip string) {
	f.t.Helper()
	var s discoveryv1.EndpointSlice
	f.g.Expect(k8s.Get(f.ctx, client.ObjectKey{Namespace: doormanNS, Name: f.doorman + "-ipv4"}, &s)).To(Succeed())
	for i := range s.Endpoints {
		if s.Endpoints[i].Addresses[0] == ip {
			s.Endpoints[i].Conditions.Terminating = ptr.To(true)
		}
	}
	f.g.Expect(k8s.Update(f.ctx, &s)).To(Succeed())
}

// TestADoormanPodJoinsTheSlicesOnlyOnceReadyAndLeavesThemWhenTerminating:
// the doorman is Ready only once it listens on every routed port, so a pod
// joins every routed slice only once it is Ready, never while starting,
// and leaves them as soon as it is terminating, Ready or not.
func TestADoormanPodJoinsTheSlicesOnlyOnceReadyAndLeavesThemWhenTerminating(t *testing.T) {
	f := newFixture(t)
	a, b := doormanPod{"doorman-a", "10.1.0.1", true}, doormanPod{"doorman-b", "10.1.0.2", false}
	f.routedBehind(f.managed, a, b)
	pointAt := f.apiSlicePointsAt
	f.g.Consistently(pointAt(a.ip), "300ms").Should(Succeed(), "a starting pod is not in the slice")

	b.ready = true
	f.setDoormen(a, b)
	f.g.Eventually(pointAt(a.ip, b.ip)).Should(Succeed(), "it joins once Ready")

	f.markTerminating(b.ip)
	f.g.Eventually(pointAt(a.ip)).Should(Succeed(), "a terminating pod leaves, though its endpoint still says Ready")
}

// apiSlicePointsAt checks that api's slice lists exactly the doorman
// addresses ips.
func (f *fixture) apiSlicePointsAt(ips ...string) func(g Gomega) {
	return func(g Gomega) {
		s, err := f.slice("api-napwake-ipv4")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(endpointIPs(s)).To(Equal(ips))
	}
}

// TestANewDoormanPodJoinsTheSlicesOnlyOnceItListens: a doorman pod that
// turns Ready joins the routed slices only once it accepts on their ports,
// checked as a new port is (docs/security.md): one whose readiness says
// more than it does (it does not listen yet) stays out, and joins as soon
// as it listens.
func TestANewDoormanPodJoinsTheSlicesOnlyOnceItListens(t *testing.T) {
	f := newFixture(t)
	a, c := doormanPod{"doorman-a", "10.1.0.1", true}, doormanPod{"doorman-c", "10.1.0.3", true}
	f.routedBehind(f.managed, a)
	f.apiSlicePointsAt(a.ip)(f.g)

	f.setDoormen(a, c) // Ready, not listening
	f.g.Consistently(f.apiSlicePointsAt(a.ip), "1s").Should(Succeed(), "a Ready doorman pod not listening on the slice's port stays out")

	f.pods.serve(f.ctx, c.ip)
	f.g.Eventually(f.apiSlicePointsAt(a.ip, c.ip)).Should(Succeed(), "it joins once it listens")
}

// TestARouteLeavesOutANewDoormanPodUntilItListens: Route, re-routing a
// paused workload whose ports stay, checks a doorman pod its slice does
// not list yet before adding it, routes through the others meanwhile and
// asks to be called again soon.
func TestARouteLeavesOutANewDoormanPodUntilItListens(t *testing.T) {
	f := newFixture(t)
	a, c := doormanPod{"doorman-a", "10.1.0.1", true}, doormanPod{"doorman-c", "10.1.0.3", true}
	r := f.routedBehind(func() *Router { return f.router(func(o *Options) { o.ListenTimeout = 300 * time.Millisecond }) }, a)
	mw := f.get(&napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: f.ns}})
	port := routesOf(mw)[0].DoormanPort

	f.setDoormen(a, c) // Ready, not listening
	after, err := r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(after).To(Equal(5*time.Second), "called again at RetryMin, for the pod left out")
	f.apiSlicePointsAt(a.ip)(f.g)
	f.g.Expect(routesOf(f.get(mw))[0].DoormanPort).To(Equal(port), "the port stays")
	f.g.Expect(wakeOnRequest(f.get(mw)).Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))

	f.pods.serve(f.ctx, c.ip)
	after, err = r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(after).To(BeZero())
	f.apiSlicePointsAt(a.ip, c.ip)(f.g)
}

// TestAHandMadeDoormanSliceLeadsNowhere: someone who may create
// EndpointSlices in the operator's namespace makes one with the doorman
// Service's labels, as the EndpointSlice controller's, naming an address
// of their own. Routed Services never lead there: only the controller's
// slices (its owner reference to the Service) name doorman pods.
func TestAHandMadeDoormanSliceLeadsNowhere(t *testing.T) {
	f := oneDoorman(t)
	forged := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: f.doorman + "-forged", Namespace: doormanNS, Labels: map[string]string{
			napwakev1alpha1.LabelServiceName:            f.doorman,
			napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceControllerManager,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	f.create(forged)
	f.pods.serve(f.ctx, "10.9.9.9")
	f.service("api")
	mw := f.pausing("api")
	_, err := f.router().Route(f.ctx, mw, f.deployment())
	f.g.Expect(err).NotTo(HaveOccurred())
	s, err := f.slice("api-napwake-ipv4")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(endpointIPs(s)).To(Equal([]string{"10.1.0.1"}), "the forged slice's address is not a doorman")
}
