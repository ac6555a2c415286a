package routing

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// managed starts a manager running the Router's controllers, its cache
// limited to the test's namespace and the doorman's, and returns the Router.
func (f *fixture) managed() *Router { return f.managedWith() }

// managedWith is managed with the Router's options changed by mod.
func (f *fixture) managedWith(mod ...func(*Options)) *Router {
	f.t.Helper()
	nss := map[string]cache.Config{f.ns: {}, doormanNS: {}}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: nss},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	f.g.Expect(err).NotTo(HaveOccurred())
	opts := Options{DoormanService: doormanNS + "/" + f.doorman, Dial: f.pods.dial}
	for _, m := range mod {
		m(&opts)
	}
	r, err := New(mgr.GetClient(), mgr.GetAPIReader(), opts, f.clock, recorder)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(r.SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	f.t.Cleanup(func() { cancel(); <-done })
	f.g.Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
	return r
}

// deployment creates the workload's Deployment, api (no controller runs it).
func (f *fixture) deployment() *corev1.PodTemplateSpec {
	const name = "api"
	f.t.Helper()
	tmpl := template(true)
	f.create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: apiLabels},
			Template: *tmpl,
		},
	})
	return tmpl
}

// TestDoormanPodsComeAndGo: when the Ready doorman pods change, every
// routed slice's endpoints follow; with none Ready the slices go and the
// condition says DoormanUnavailable; when one returns, routing does.
func TestDoormanPodsComeAndGo(t *testing.T) {
	f := newFixture(t)
	a, b, c := doormanPod{"doorman-a", "10.1.0.1", true}, doormanPod{"doorman-b", "10.1.0.2", true}, doormanPod{"doorman-c", "10.1.0.3", true}
	f.setDoormen(a, b)
	f.pods.serve(f.ctx, a.ip, b.ip, c.ip)
	tmpl := f.deployment()
	for _, s := range []string{"api", "api-grpc", "api-admin"} {
		f.service(s)
	}
	mw := f.pausing("api")
	r := f.managed()
	_, err := r.Route(f.ctx, mw, tmpl)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(f.slices()).To(HaveLen(3))

	allPointAt := func(ips ...string) func(g Gomega) {
		return func(g Gomega) {
			ss := f.slices()
			g.Expect(ss).To(HaveLen(3))
			for i := range ss {
				g.Expect(endpointIPs(&ss[i])).To(Equal(ips), ss[i].Name)
			}
		}
	}
	b.ready = false
	f.setDoormen(a, b)
	f.g.Eventually(allPointAt("10.1.0.1")).Should(Succeed(), "a doorman pod that stops being Ready leaves every slice")
	f.setDoormen(a, b, c)
	f.g.Eventually(allPointAt("10.1.0.1", "10.1.0.3")).Should(Succeed(), "a new Ready pod joins every slice")

	a.ready, c.ready = false, false
	f.setDoormen(a, b, c)
	f.g.Eventually(func(g Gomega) {
		g.Expect(f.slices()).To(BeEmpty())
		g.Expect(wakeOnRequest(f.get(mw)).Reason).To(Equal(napwakev1alpha1.ReasonDoormanUnavailable))
		g.Expect(routesOf(f.get(mw))).To(HaveLen(3), "the routes and ports stay")
	}).Should(Succeed())

	b.ready = true
	f.setDoormen(a, b, c)
	f.g.Eventually(allPointAt("10.1.0.2")).Should(Succeed(), "routing is restored when a doorman pod is back")
	f.g.Eventually(func() string { return wakeOnRequest(f.get(mw)).Reason }).Should(Equal(napwakev1alpha1.ReasonDoormanRouted))
}

// TestServiceDeletedWhilePaused: the routing controller re-routes when a
// Service goes: its slice and route go, its port is held, the rest stays.
func TestServiceDeletedWhilePaused(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	tmpl := f.deployment()
	f.service("api")
	web := f.service("web")
	mw := f.pausing("api")
	r := f.managed()
	_, err := r.Route(f.ctx, mw, tmpl)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(sliceNames(f.slices())).To(ConsistOf("api-napwake-ipv4", "web-napwake-ipv4"))
	var webPort int32
	for _, rt := range mw.Status.Doorman.Routes {
		if rt.Service == "web" {
			webPort = rt.DoormanPort
		}
	}

	f.g.Expect(k8s.Delete(f.ctx, web)).To(Succeed())
	f.g.Eventually(func(g Gomega) {
		g.Expect(sliceNames(f.slices())).To(ConsistOf("api-napwake-ipv4"), "no orphaned slice")
		got := f.get(mw)
		g.Expect(got.Status.Doorman.Routes).To(HaveLen(1))
		g.Expect(got.Status.Doorman.PortHolds).To(ContainElement(HaveField("Port", webPort)))
	}).Should(Succeed())
}

// TestGKEIngressTakesAServiceOffAndBack: a Service with {"ingress": true}
// comes off the doorman once a GKE Ingress uses it, and is routed again
// once none does; the routing controller looks again on Ingress changes.
func TestGKEIngressTakesAServiceOffAndBack(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	tmpl := f.deployment()
	f.service("api", withAnnotation(napwakev1alpha1.AnnotationGKENEG, `{"ingress": true}`))
	mw := f.pausing("api")
	r := f.managed()
	_, err := r.Route(f.ctx, mw, tmpl)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(wakeOnRequest(f.get(mw)).Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))

	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns, Annotations: map[string]string{napwakev1alpha1.AnnotationIngressClass: "gce"}},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: "api", Port: networkingv1.ServiceBackendPort{Number: 80}}}},
	}
	f.create(ing)
	f.g.Eventually(func(g Gomega) {
		c := wakeOnRequest(f.get(mw))
		g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonUnsupportedLoadBalancer))
		g.Expect(c.Message).To(ContainSubstring("GKE Ingress web uses it"))
		g.Expect(f.slices()).To(BeEmpty())
	}).Should(Succeed())
	f.g.Eventually(func() []string { return f.eventReasons(mw) }).Should(ContainElement("UnsupportedLoadBalancer/Warning"))

	f.g.Expect(k8s.Delete(f.ctx, ing)).To(Succeed())
	f.g.Eventually(func(g Gomega) {
		g.Expect(wakeOnRequest(f.get(mw)).Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))
		g.Expect(sliceNames(f.slices())).To(ConsistOf("api-napwake-ipv4"))
	}).Should(Succeed())
}

// TestADoormanThatAppearsAfterStartIsUsed: a workload paused while no
// doorman pod was Ready is routed once the first one is, even when the
// operator started without any.
func TestADoormanThatAppearsAfterStartIsUsed(t *testing.T) {
	f := newFixture(t)
	f.pods.serve(f.ctx, "10.1.0.1")
	tmpl := f.deployment()
	f.service("api")
	mw := f.pausing("api")
	_, err := f.router().Route(f.ctx, mw, tmpl)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(wakeOnRequest(f.get(mw)).Reason).To(Equal(napwakev1alpha1.ReasonDoormanUnavailable))
	f.managed()
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.g.Eventually(func(g Gomega) {
		g.Expect(wakeOnRequest(f.get(mw)).Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))
		g.Expect(sliceNames(f.slices())).To(ConsistOf("api-napwake-ipv4"))
	}).Should(Succeed())
}

// TestASliceTheChangeMissedIsMovedOnTheSecondLook: a route that read the
// Ready doorman set just before it changed writes its slice with the old
// set, and the change's MoveAll, listing a cache that did not hold that
// slice yet, misses it. The doormen controller looks again settleAfter
// later and moves it, and asks for no third.
func TestASliceTheChangeMissedIsMovedOnTheSecondLook(t *testing.T) {
	f := newFixture(t)
	a, b := doormanPod{"doorman-a", "10.1.0.1", true}, doormanPod{"doorman-b", "10.1.0.2", true}
	r := f.routedBehind(func() *Router { return f.router() }, a, b) // read the set {a, b}
	ips := func() []string { ss := f.slices(); f.g.Expect(ss).To(HaveLen(1)); return endpointIPs(&ss[0]) }
	f.g.Expect(ips()).To(Equal([]string{a.ip, b.ip}))

	b.ready = false
	f.setDoormen(a, b)
	now, err := r.doormen(f.ctx)
	f.g.Expect(err).NotTo(HaveOccurred())
	// The change was applied (its MoveAll did not see the slice) and the
	// second look is due.
	r.applied, r.appliedOK, r.settling = now, true, true
	res, err := r.reconcileDoormen(f.ctx, reconcile.Request{})
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(res.RequeueAfter).To(BeZero(), "settled: no further look")
	f.g.Expect(ips()).To(Equal([]string{a.ip}), "the second look moves the slice the change missed")

	// A change is applied at once and asks for the second look.
	b.ready = true
	f.setDoormen(a, b)
	res, err = r.reconcileDoormen(f.ctx, reconcile.Request{})
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(res.RequeueAfter).To(Equal(settleAfter), "a change asks for the second look")
	f.g.Expect(ips()).To(Equal([]string{a.ip, b.ip}))
}
