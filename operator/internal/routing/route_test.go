package routing

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing/plan"
	"napwake.dev/operator/internal/routing/ports"
)

// TestRouteWritesRoutesThenSlicesBeforeReturning: at a pause, Route
// persists the routes, checks each Ready doorman pod listens, and writes the
// slices, all before it returns, so the caller scales to 0 only once the
// slices are in place (the pause/wake core calls Route before scaling).
func TestRouteWritesRoutesThenSlicesBeforeReturning(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true}, doormanPod{"doorman-b", "10.1.0.2", true}, doormanPod{"doorman-c", "10.1.0.3", false})
	f.pods.serve(f.ctx, "10.1.0.1", "10.1.0.2")
	svc := f.service("api")
	mw := f.pausing("api")
	r := f.router()

	after, err := r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(after).To(BeZero())

	// The routes are in status, updated in place on the caller's object.
	f.g.Expect(mw.Status.Doorman).NotTo(BeNil())
	routes := mw.Status.Doorman.Routes
	f.g.Expect(routes).To(HaveLen(1))
	rt := routes[0]
	f.g.Expect(rt.Service).To(Equal("api"))
	f.g.Expect(rt.PortName).To(Equal("http"))
	f.g.Expect(rt.Port).To(Equal(int32(80)))
	f.g.Expect(rt.DoormanPort).To(BeNumerically(">=", 20000))
	f.g.Expect(rt.DoormanPort).To(BeNumerically("<=", 29999))
	f.g.Expect(rt.IPFamilies).To(Equal([]napwakev1alpha1.IPFamily{"IPv4"}))
	f.g.Expect(f.get(mw).Status.Doorman.Routes).To(Equal(routes))
	c := wakeOnRequest(f.get(mw))
	f.g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))
	f.g.Expect(c.Message).To(Equal(plan.MessageRouted))

	// The slice is there the moment Route returns: no Eventually.
	s, err := f.slice("api-napwake-ipv4")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(s.Labels).To(Equal(map[string]string{
		"kubernetes.io/service-name":             "api",
		"endpointslice.kubernetes.io/managed-by": "napwake.dev",
		"napwake.dev/workload":                   "api",
	}))
	f.g.Expect(s.AddressType).To(Equal(discoveryv1.AddressTypeIPv4))
	f.g.Expect(endpointIPs(s)).To(Equal([]string{"10.1.0.1", "10.1.0.2"}), "the Ready doorman pods only")
	f.g.Expect(s.Ports).To(HaveLen(1))
	f.g.Expect(*s.Ports[0].Name).To(Equal("http"))
	f.g.Expect(*s.Ports[0].Port).To(Equal(rt.DoormanPort))
	f.g.Expect(s.OwnerReferences).To(HaveLen(1))
	f.g.Expect(s.OwnerReferences[0].UID).To(Equal(svc.UID))

	// The order: status (routes) was written before the slice. Resource
	// versions are etcd revisions, ordered across kinds.
	statusRV, _ := strconv.ParseInt(mw.ResourceVersion, 10, 64)
	sliceRV, _ := strconv.ParseInt(s.ResourceVersion, 10, 64)
	f.g.Expect(statusRV).To(BeNumerically("<", sliceRV), "routes persisted before the slice is written")

	// Each Ready doorman pod was connected to on the new port.
	for _, ip := range []string{"10.1.0.1", "10.1.0.2"} {
		a := f.pods.addr(ip) + ":" + strconv.Itoa(int(rt.DoormanPort))
		f.pods.mu.Lock()
		n := f.pods.dials[a]
		f.pods.mu.Unlock()
		f.g.Expect(n).To(BeNumerically(">=", 1), "connected to %s", a)
	}

	// A second Route keeps the port and writes nothing new.
	rv := s.ResourceVersion
	_, err = r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(mw.Status.Doorman.Routes).To(Equal(routes))
	s2, _ := f.slice("api-napwake-ipv4")
	f.g.Expect(s2.ResourceVersion).To(Equal(rv))
}

// TestRouteIPFamilies: IPv4, IPv6 and dual-stack Services each get a slice
// per family the Service and a Ready doorman pod share.
func TestRouteIPFamilies(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true}, doormanPod{"doorman-a", "fd00::1", true})
	f.pods.serve(f.ctx, "10.1.0.1", "fd00::1")
	f.service("v4", withFamilies(corev1.IPv4Protocol))
	f.service("v6", withFamilies(corev1.IPv6Protocol))
	f.service("dual", withFamilies(corev1.IPv6Protocol, corev1.IPv4Protocol))
	mw := f.pausing("api")
	_, err := f.router().Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())

	f.g.Expect(sliceNames(f.slices())).To(ConsistOf("v4-napwake-ipv4", "v6-napwake-ipv6", "dual-napwake-ipv4", "dual-napwake-ipv6"))
	for _, tc := range []struct{ name, ip string }{
		{"v4-napwake-ipv4", "10.1.0.1"}, {"v6-napwake-ipv6", "fd00::1"}, {"dual-napwake-ipv4", "10.1.0.1"}, {"dual-napwake-ipv6", "fd00::1"},
	} {
		s, err := f.slice(tc.name)
		f.g.Expect(err).NotTo(HaveOccurred())
		f.g.Expect(endpointIPs(s)).To(Equal([]string{tc.ip}), tc.name)
	}
	byService := map[string][]napwakev1alpha1.IPFamily{}
	for _, rt := range mw.Status.Doorman.Routes {
		byService[rt.Service] = rt.IPFamilies
	}
	f.g.Expect(byService).To(Equal(map[string][]napwakev1alpha1.IPFamily{"v4": {"IPv4"}, "v6": {"IPv6"}, "dual": {"IPv6", "IPv4"}}))
}

// TestRouteReasons: each reason of "When a workload isn't routed", against
// the API server.
func TestRouteReasons(t *testing.T) {
	type tc struct {
		name       string
		setup      func(f *fixture)
		opts       func(*Options)
		tmpl       *corev1.PodTemplateSpec
		wantStatus metav1.ConditionStatus
		wantReason string
		wantInMsg  string
		wantSlices []string
	}
	tests := []tc{
		{name: "no Service selects the workload: NoServices", setup: func(f *fixture) {
			f.service("web", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })
			f.service("manual", func(s *corev1.Service) { s.Spec.Selector = nil })
			f.service("ext", func(s *corev1.Service) {
				s.Spec.Selector = nil
				s.Spec.Type = corev1.ServiceTypeExternalName
				s.Spec.ExternalName = "db.example.com"
				s.Spec.Ports = nil
			})
		}, wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNoServices, wantInMsg: "no Service selects the workload's pods"},
		{name: "a headless Service beside a routed one is named", setup: func(f *fixture) {
			f.service("api")
			f.service("api-pods", func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone; s.Spec.Ports = nil })
		}, wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted, wantInMsg: "not routed: api-pods (headless", wantSlices: []string{"api-napwake-ipv4"}},
		{name: "UDP and SCTP only: NoServices naming the ports", setup: func(f *fixture) {
			f.service("dns", withPorts(corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, corev1.ServicePort{Name: "s", Port: 9, Protocol: corev1.ProtocolSCTP}))
		}, wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNoServices, wantInMsg: "not dns UDP, s SCTP"},
		{name: "ignore-ports by name and number", setup: func(f *fixture) {
			f.service("api", withPorts(corev1.ServicePort{Name: "http", Port: 80}, corev1.ServicePort{Name: "metrics", Port: 9090}, corev1.ServicePort{Name: "admin", Port: 9091}),
				withAnnotation(napwakev1alpha1.AnnotationDoormanIgnorePorts, "metrics,9091"))
		}, wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted, wantSlices: []string{"api-napwake-ipv4"}},
		{name: "internalTrafficPolicy Local: NodeLocalTraffic", setup: func(f *fixture) {
			f.service("api", func(s *corev1.Service) {
				p := corev1.ServiceInternalTrafficPolicyLocal
				s.Spec.InternalTrafficPolicy = &p
			})
		}, wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNodeLocalTraffic, wantInMsg: "api (internalTrafficPolicy: Local)"},
		{name: "an IPv6 Service and IPv4 doorman pods: UnsupportedIPFamily", setup: func(f *fixture) {
			f.service("api", withFamilies(corev1.IPv6Protocol))
		}, wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonUnsupportedIPFamily, wantInMsg: "api (IPv6, and no Ready doorman pod has an address in it)"},
		{name: "standalone NEGs: UnsupportedLoadBalancer", setup: func(f *fixture) {
			f.service("api", withAnnotation(napwakev1alpha1.AnnotationGKENEG, `{"exposed_ports":{"80":{}}}`))
		}, wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonUnsupportedLoadBalancer, wantInMsg: "standalone NEGs"},
		{name: "the target is gone: TargetNotFound, nothing routed", setup: func(f *fixture) { f.service("api") },
			tmpl: nil, wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonTargetNotFound, wantInMsg: "Deployment api is gone"},
		{name: "--doorman-service=\"\": DoormanDisabled", setup: func(f *fixture) { f.service("api") }, opts: func(o *Options) { o.DoormanService = "" },
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonDoormanDisabled, wantInMsg: "--doorman-service"},
		{name: "no doorman pod Ready: DoormanUnavailable", setup: func(f *fixture) {
			f.service("api")
			f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", false})
		}, wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonDoormanUnavailable, wantInMsg: "no doorman pod is Ready"},
		{name: "a Service with 100 ports: TooManyPorts, nothing routed", setup: func(f *fixture) { f.service("api", withPorts(tcpPorts(100)...)) },
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonTooManyPorts, wantInMsg: "would hold 100 doorman ports, over the cap of 32 per workload"},
		{name: "a workload over --ports-per-workload: TooManyPorts", setup: func(f *fixture) { f.service("api", withPorts(tcpPorts(3)...)) },
			opts:       func(o *Options) { o.PortsPerWorkload, o.PortsPerNamespace = 2, 2 },
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonTooManyPorts, wantInMsg: "would hold 3 doorman ports, over the cap of 2 per workload"},
		{name: "a namespace over --ports-per-namespace: TooManyPorts", setup: func(f *fixture) {
			// Another workload of the namespace holds two ports (ports
			// no other test reaches); api's two are within its own cap.
			f.withRoutes("web", []napwakev1alpha1.Route{{Service: "web", Port: 80, DoormanPort: 29990}, {Service: "web", Port: 81, DoormanPort: 29991}}, nil)
			f.service("api", withPorts(tcpPorts(2)...))
		}, opts: func(o *Options) { o.PortsPerWorkload, o.PortsPerNamespace = 2, 3 },
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonTooManyPorts, wantInMsg: " would hold 4 doorman ports, over the cap of 3 per namespace"},
		{name: "an unnamed single port is routed with an empty port name", setup: func(f *fixture) {
			f.service("api", withPorts(corev1.ServicePort{Port: 8080}))
		}, wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted, wantSlices: []string{"api-napwake-ipv4"}},
		{name: "no readiness probe: the condition says so", setup: func(f *fixture) { f.service("api") }, tmpl: template(false),
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted, wantInMsg: plan.MessageNoReadinessProbe, wantSlices: []string{"api-napwake-ipv4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
			f.pods.serve(f.ctx, "10.1.0.1")
			tt.setup(f)
			mw := f.pausing("api")
			var mods []func(*Options)
			if tt.opts != nil {
				mods = append(mods, tt.opts)
			}
			tmpl := tt.tmpl
			if tmpl == nil && !strings.Contains(tt.name, "TargetNotFound") {
				tmpl = template(true)
			}
			_, err := f.router(mods...).Route(f.ctx, mw, tmpl)
			f.g.Expect(err).NotTo(HaveOccurred())
			c := wakeOnRequest(f.get(mw))
			f.g.Expect(c.Status).To(Equal(tt.wantStatus), c.Message)
			f.g.Expect(c.Reason).To(Equal(tt.wantReason), c.Message)
			f.g.Expect(c.Message).To(ContainSubstring(tt.wantInMsg))
			f.g.Expect(sliceNames(f.slices())).To(ConsistOf(tt.wantSlices))
			if tt.wantStatus == metav1.ConditionFalse && tt.wantReason != napwakev1alpha1.ReasonDoormanUnavailable {
				f.g.Expect(routesOf(f.get(mw))).To(BeEmpty())
			}
		})
	}
}

// TestBadServicesAreRefusedByTheAPIServer: duplicate port names and a
// ClusterIP Service with no ports never reach the router; the plan's table
// tests cover them anyway.
func TestBadServicesAreRefusedByTheAPIServer(t *testing.T) {
	f := newFixture(t)
	for name, s := range map[string]*corev1.Service{
		"duplicate port names": {Spec: corev1.ServiceSpec{Selector: apiLabels, Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "http", Port: 81}}}},
		"no ports":             {Spec: corev1.ServiceSpec{Selector: apiLabels}},
	} {
		s.Name, s.Namespace = strings.ReplaceAll(name, " ", "-"), f.ns
		f.g.Expect(k8s.Create(f.ctx, s)).NotTo(Succeed(), name)
	}
}

// TestNoReadinessProbeEventOncePerPause: the warning event is raised once
// per pause, however often Route runs.
func TestNoReadinessProbeEventOncePerPause(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	f.service("api")
	mw := f.pausing("api")
	r := f.router()
	for range 3 {
		_, err := r.Route(f.ctx, mw, template(false))
		f.g.Expect(err).NotTo(HaveOccurred())
	}
	f.g.Eventually(func() []string { return f.eventReasons(mw) }).Should(ContainElement("NoReadinessProbe/Warning"))
	if n := recorder.count(mw, "NoReadinessProbe"); n != 1 {
		t.Fatalf("NoReadinessProbe raised %d times in one pause, want once", n)
	}
}

// TestAStartupProbeAloneGatesReadiness: a container is not Ready until its
// startup probe passes, so a workload with only a startupProbe is routed
// without the NoReadinessProbe warning, on the condition or as an event.
func TestAStartupProbeAloneGatesReadiness(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	f.service("api")
	mw := f.pausing("api")
	tmpl := template(false)
	tmpl.Spec.Containers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstrPort(8080)}}}
	_, err := f.router().Route(f.ctx, mw, tmpl)
	f.g.Expect(err).NotTo(HaveOccurred())
	c := wakeOnRequest(f.get(mw))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted), c.Message)
	f.g.Expect(c.Message).To(Equal(plan.MessageRouted))
	f.g.Expect(recorder.count(mw, napwakev1alpha1.EventNoReadinessProbe)).To(BeZero())
}

// TestAllPortsTakenIsNoFreePort: with every doorman port held (another
// workload's status records the holds its released ports keep), a pausing
// workload gets WakeOnRequest=False NoFreePort, no route and no slice. The
// Router's allocator covers only the range's last two ports (no other test
// reaches them), so two holds fill it.
func TestAllPortsTakenIsNoFreePort(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	const lo, hi = napwakev1alpha1.DoormanPortMax - 1, napwakev1alpha1.DoormanPortMax
	until := metav1.NewTime(f.clock.Now().Add(time.Hour))
	filler := f.withRoutes("filler", nil, []napwakev1alpha1.PortHold{{Port: lo, Until: until}, {Port: hi, Until: until}})
	// The holds outlast the test on the fake clock every test shares: they
	// go with it.
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), filler) })
	f.service("api")
	mw := f.pausing("api")
	r := f.router()
	a, err := ports.New(ports.Limits{Min: lo, Max: hi, PerWorkload: napwakev1alpha1.DefaultPortsPerWorkload, PerNamespace: napwakev1alpha1.DefaultPortsPerNamespace})
	f.g.Expect(err).NotTo(HaveOccurred())
	r.alloc = a
	_, err = r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	c := wakeOnRequest(f.get(mw))
	f.g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonNoFreePort), c.Message)
	f.g.Expect(c.Message).To(Equal(fmt.Sprintf("no free doorman port: all 2 doorman ports (%d-%d) are in use or held; no Service is routed", lo, hi)))
	f.g.Expect(routesOf(f.get(mw))).To(BeEmpty())
	f.g.Expect(f.slices()).To(BeEmpty())
}
