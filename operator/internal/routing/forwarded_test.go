package routing

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/forwarder"
	"napwake.dev/operator/internal/routing/plan"
	"napwake.dev/shared/negcheck"
)

const forwarderImage = "registry.local/napwake-forwarder:v0.1.0"

func withForwarder(o *Options) { o.Forwarder = ForwarderOptions{Image: forwarderImage} }

// negMarker is one of the three rules of "A Service is in NEGs when", as a
// Service option and whatever else it needs in the namespace.
type negMarker struct {
	name  string
	opt   svcOpt
	setup func(f *fixture)
}

var negMarkers = []negMarker{
	{"a GKE Ingress uses it while it has ingress true", withAnnotation(napwakev1alpha1.AnnotationGKENEG, `{"ingress": true}`), func(f *fixture) {
		ing := gkeIngress("web", "api")
		ing.Namespace = f.ns
		f.create(ing)
	}},
	{"standalone NEGs (exposed_ports)", withAnnotation(napwakev1alpha1.AnnotationGKENEG, `{"exposed_ports":{"80":{}}}`), func(*fixture) {}},
	{"neg-status", withAnnotation(napwakev1alpha1.AnnotationGKENEGStatus, `{"network_endpoint_groups":{"80":"k8s1-api"},"zones":["europe-west1-b"]}`), func(*fixture) {}},
}

// serviceAPI creates Service api, marked as in NEGs, its target port the
// workload's named port web.
func (m negMarker) serviceAPI(f *fixture) {
	m.setup(f)
	f.service("api", m.opt, targetWeb)
}

// forwardedTemplate is the workload's template with its named port "web".
func forwardedTemplate() *corev1.PodTemplateSpec {
	t := template(true)
	t.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}
	return t
}

func targetWeb(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("web") }

// forwarderDeployment reads the workload's forwarder Deployment.
func (f *fixture) forwarderDeployment(workload string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	return d, k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: forwarder.Name(workload)}, d)
}

// forwarderPod creates a forwarder pod of workload api, as its ReplicaSet
// would, with the given status (envtest runs no controllers or kubelet),
// on a node of its own whose podCIDRs hold the pod's addresses, as GKE's
// NEG controller checks. It returns the pod as created.
func (f *fixture) forwarderPod(name string, status corev1.PodStatus, mod ...func(*corev1.Pod)) *corev1.Pod {
	f.t.Helper()
	node := f.node(name, status.PodIPs)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: forwarder.Labels(doormanNS, "api")},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "forwarder", Image: forwarderImage}}, NodeName: node},
	}
	for _, m := range mod {
		m(p)
	}
	f.create(p)
	p.Status = status
	f.g.Expect(k8s.Status().Update(f.ctx, p)).To(Succeed())
	return p
}

// node creates the node a forwarder pod runs on, named after the test's
// namespace (nodes are cluster-wide), its podCIDRs the /24 or /64 around
// each of ips.
func (f *fixture) node(pod string, ips []corev1.PodIP) string {
	f.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-node-" + pod}}
	for _, ip := range ips {
		a := netip.MustParseAddr(ip.IP)
		bits := 24
		if a.Is6() {
			bits = 64
		}
		n.Spec.PodCIDRs = append(n.Spec.PodCIDRs, netip.PrefixFrom(a, bits).Masked().String())
	}
	if len(n.Spec.PodCIDRs) > 0 {
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
	f.create(n)
	return n.Name
}

// expectGKETakesTheForwardedSlices runs the checker written from GKE's NEG
// controller's rules (shared/negcheck) over the namespace's forwarded
// slices, and expects them to be ips, and to pass.
func (f *fixture) expectGKETakesTheForwardedSlices(ips ...string) {
	f.t.Helper()
	slices, problems, err := negcheck.Live(f.ctx, k8s, f.ns)
	f.g.Expect(err).NotTo(HaveOccurred())
	var got []string
	for i := range slices {
		got = append(got, endpointIPs(&slices[i])...)
	}
	f.g.Expect(got).To(ConsistOf(ips), "the forwarded slices' addresses")
	f.g.Expect(problems).To(BeEmpty(), "GKE's NEG controller takes every endpoint of every forwarded slice")
}

// oneDoorman is a fixture with one Ready doorman pod, listening.
func oneDoorman(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	return f
}

func readyStatus(ip string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
}

func TestAPausedWorkloadsNEGServiceGoesThroughTheForwarderItsOtherServicesToTheDoorman(t *testing.T) {
	for _, m := range negMarkers {
		t.Run(m.name, func(t *testing.T) {
			f := oneDoorman(t)
			m.serviceAPI(f)
			f.service("internal")
			mw := f.pausing("api")
			r := f.router(withForwarder)

			after, err := r.Route(f.ctx, mw, forwardedTemplate())
			f.g.Expect(err).NotTo(HaveOccurred())
			f.g.Expect(after).To(Equal(5*time.Second), "looked at again while no forwarder pod is Ready")
			routes := f.get(mw).Status.Doorman
			f.g.Expect(routes.Forwarded).To(BeTrue())
			f.g.Expect(routes.Routes).To(HaveLen(2))
			apiRoute, internalRoute := routes.Routes[0], routes.Routes[1]
			f.g.Expect([]bool{apiRoute.Forwarded, internalRoute.Forwarded}).To(Equal([]bool{true, false}))

			// The Deployment, exactly the pure shape, owned by the ManagedWorkload.
			dep, err := f.forwarderDeployment("api")
			f.g.Expect(err).NotTo(HaveOccurred())
			want := forwarder.Deployment(forwarder.Spec{Namespace: f.ns, Workload: "api", OwnerUID: mw.UID, OperatorNamespace: doormanNS,
				Image: forwarderImage, DoormanHost: f.doorman + "." + doormanNS + ".svc", Ports: []forwarder.Port{{Listen: 8080, Doorman: apiRoute.DoormanPort}}})
			f.g.Expect(equality.Semantic.DeepDerivative(want.Spec, dep.Spec)).To(BeTrue(), "the Deployment's spec is forwarder.Deployment's")
			f.g.Expect(dep.Labels).To(Equal(want.Labels))
			f.g.Expect(dep.OwnerReferences).To(Equal([]metav1.OwnerReference{{APIVersion: "napwake.dev/v1alpha1", Kind: "ManagedWorkload", Name: "api", UID: mw.UID, Controller: ptrTrue()}}))
			pod := dep.Spec.Template.Spec
			f.g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)))
			f.g.Expect(pod.ServiceAccountName).To(Equal("default"))
			f.g.Expect(*pod.AutomountServiceAccountToken).To(BeFalse())
			f.g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
			f.g.Expect(pod.SecurityContext.Sysctls).To(BeEmpty(), "8080 needs no sysctl")
			f.g.Expect(pod.TopologySpreadConstraints[0].TopologyKey).To(Equal("kubernetes.io/hostname"))
			f.g.Expect(pod.Containers[0].Args).To(ContainElement("--forward=8080=" + itoa(apiRoute.DoormanPort)))
			f.g.Expect(pod.Containers[0].Ports[0].ContainerPort).To(Equal(int32(8080)))
			f.g.Expect(dep.Spec.Template.Labels).To(HaveKeyWithValue("app.kubernetes.io/name", "napwake-forwarder"))
			f.g.Expect(dep.Spec.Template.Labels).To(HaveKeyWithValue("napwake.dev/operator", doormanNS))
			f.g.Expect(dep.Spec.Template.Labels).To(HaveKeyWithValue("napwake.dev/ignore", "true"))

			// No forwarder pod is Ready: the other Service is routed, the message names api.
			c := wakeOnRequest(f.get(mw))
			f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))
			f.g.Expect(c.Message).To(Equal(plan.MessageRouted + "; api routed once the NEG forwarder has a Ready pod: its pods are not created yet"))
			f.g.Expect(sliceNames(f.slices())).To(Equal([]string{"internal-napwake-ipv4"}))

			// Two Ready forwarder pods: api's slice leads to them, on the target port.
			fwdA := f.forwarderPod("fwd-a", readyStatus("10.2.0.1"))
			f.forwarderPod("fwd-b", readyStatus("10.2.0.2"))
			after, err = r.Route(f.ctx, mw, forwardedTemplate())
			f.g.Expect(err).NotTo(HaveOccurred())
			f.g.Expect(after).To(BeZero())
			f.g.Expect(wakeOnRequest(f.get(mw)).Message).To(Equal(plan.MessageRouted))
			s, err := f.slice("api-napwake-ipv4")
			f.g.Expect(err).NotTo(HaveOccurred())
			f.g.Expect(s.Labels).To(HaveKeyWithValue("napwake.dev/forwarded", "true"))
			f.g.Expect(endpointIPs(s)).To(Equal([]string{"10.2.0.1", "10.2.0.2"}))
			f.g.Expect(s.Endpoints[0].TargetRef).To(Equal(&corev1.ObjectReference{Kind: "Pod", Namespace: f.ns, Name: "fwd-a", UID: fwdA.UID}),
				"each endpoint names its forwarder pod, in the Service's namespace")
			f.g.Expect(s.Endpoints[0].NodeName).To(Equal(ptr.To(fwdA.Spec.NodeName)), "and its node")
			f.expectGKETakesTheForwardedSlices("10.2.0.1", "10.2.0.2")
			f.g.Expect(*s.Ports[0].Name).To(Equal("http"))
			f.g.Expect(*s.Ports[0].Port).To(Equal(int32(8080)))
			other, err := f.slice("internal-napwake-ipv4")
			f.g.Expect(err).NotTo(HaveOccurred())
			f.g.Expect(other.Labels).NotTo(HaveKey("napwake.dev/forwarded"))
			f.g.Expect(endpointIPs(other)).To(Equal([]string{"10.1.0.1"}))
			f.g.Expect(other.Endpoints[0].TargetRef).To(BeNil(), "the doorman's own slices carry no targetRef")
			f.g.Expect(*other.Ports[0].Port).To(Equal(internalRoute.DoormanPort))

			// A doorman move leaves the forwarded slice alone.
			f.g.Expect(r.MoveAll(f.ctx, nil)).To(Succeed())
			s, _ = f.slice("api-napwake-ipv4")
			f.g.Expect(endpointIPs(s)).To(Equal([]string{"10.2.0.1", "10.2.0.2"}))

			f.wakeAndExpectTheForwarderGoesAMinuteAfterTheDrain(r, mw)
		})
	}
}

// TestAHandEditedForwarderIsPutBack: someone scales the forwarder to zero
// and changes its image, leaving the operator's spec hash as it was; the
// next Route puts both back.
func TestAHandEditedForwarderIsPutBack(t *testing.T) {
	f := oneDoorman(t)
	negMarkers[0].serviceAPI(f)
	mw := f.pausing("api")
	r := f.router(withForwarder)
	_, err := r.Route(f.ctx, mw, forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	dep, err := f.forwarderDeployment("api")
	f.g.Expect(err).NotTo(HaveOccurred())
	base := dep.DeepCopy()
	dep.Spec.Replicas = ptr.To[int32](0)
	dep.Spec.Template.Spec.Containers[0].Image = "example.com/someone-else:1"
	f.g.Expect(k8s.Patch(f.ctx, dep, client.MergeFrom(base))).To(Succeed())

	_, err = r.Route(f.ctx, f.get(mw), forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	dep, err = f.forwarderDeployment("api")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)), "the replicas put back")
	f.g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal(forwarderImage), "the image put back")
}

func ptrTrue() *bool { return ptr.To(true) }

func itoa(p int32) string { return strconv.Itoa(int(p)) }

func gkeIngress(name, backend string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{napwakev1alpha1.AnnotationIngressClass: "gce"}},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: backend, Port: networkingv1.ServiceBackendPort{Number: 80}}}},
	}
}

// wakeAndExpectTheForwarderGoesAMinuteAfterTheDrain: Unroute (the wake)
// takes the slices down and marks the forwarder; it stays until 90 s later
// (the 30 s drain and a minute), by the injected clock, then goes.
func (f *fixture) wakeAndExpectTheForwarderGoesAMinuteAfterTheDrain(r *Router, mw *napwakev1alpha1.ManagedWorkload) {
	f.t.Helper()
	mw = f.get(mw)
	base := mw.DeepCopy()
	mw.Status.Phase = napwakev1alpha1.PhaseResuming
	f.g.Expect(k8s.Status().Patch(f.ctx, mw, client.MergeFrom(base))).To(Succeed())
	_, err := r.Unroute(f.ctx, mw)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(f.slices()).To(BeEmpty())
	dep, err := f.forwarderDeployment(mw.Name)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(dep.Annotations).To(HaveKeyWithValue(forwarder.AnnotationDeleteAfter, f.clock.Now().Add(90*time.Second).Format(time.RFC3339)))
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(dep)}
	res, err := r.reconcileForwarder(f.ctx, req)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(res.RequeueAfter).To(Equal(90 * time.Second))
	f.clock.Step(89 * time.Second)
	_, _ = r.reconcileForwarder(f.ctx, req)
	_, err = f.forwarderDeployment(mw.Name)
	f.g.Expect(err).NotTo(HaveOccurred(), "still there 89 s after the wake")
	f.g.Expect(r.reap).To(BeEmpty())
	f.clock.Step(time.Second)
	f.g.Eventually(r.reap).Should(Receive(), "the injected clock has the forwarders controller look again")
	_, err = r.reconcileForwarder(f.ctx, req)
	f.g.Expect(err).NotTo(HaveOccurred())
	_, err = f.forwarderDeployment(mw.Name)
	f.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "deleted 90 s after the wake")
}

func TestWithTheForwarderOffANEGServiceIsUnsupportedLoadBalancerAndNoForwarderRuns(t *testing.T) {
	for _, m := range negMarkers {
		t.Run(m.name, func(t *testing.T) {
			f := oneDoorman(t)
			m.serviceAPI(f)
			mw := f.pausing("api")
			_, err := f.router().Route(f.ctx, mw, forwardedTemplate())
			f.g.Expect(err).NotTo(HaveOccurred())
			c := wakeOnRequest(f.get(mw))
			f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonUnsupportedLoadBalancer))
			f.g.Expect(f.get(mw).Status.Doorman).To(BeNil())
			f.g.Expect(f.slices()).To(BeEmpty())
			_, err = f.forwarderDeployment("api")
			f.g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			f.g.Expect(recorder.count(mw, napwakev1alpha1.EventUnsupportedLB)).To(Equal(1))
		})
	}
}

func TestForwarderNotReadySaysWhyUntilAForwarderPodIsReady(t *testing.T) {
	f := oneDoorman(t)
	f.service("api", negMarkers[2].opt, targetWeb)
	mw := f.pausing("api")
	r := f.router(withForwarder)
	_, err := r.Route(f.ctx, mw, forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	c := wakeOnRequest(f.get(mw))
	f.g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonForwarderNotReady))
	f.g.Expect(c.Message).To(Equal("no Service is routed yet: api wait for the NEG forwarder, which has no Ready pod: its pods are not created yet"))

	// A quota refusing its pods: the Deployment's ReplicaFailure.
	dep, err := f.forwarderDeployment("api")
	f.g.Expect(err).NotTo(HaveOccurred())
	quota := `pods "napwake-forwarder-api-5f7-x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=4, limited: pods=4`
	dep.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: quota}}
	f.g.Expect(k8s.Status().Update(f.ctx, dep)).To(Succeed())
	_, err = r.Route(f.ctx, mw, forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(wakeOnRequest(f.get(mw)).Message).To(HaveSuffix("which has no Ready pod: Deployment napwake-forwarder-api: FailedCreate: " + quota))

	// An image that cannot be pulled.
	dep.Status.Conditions = nil
	f.g.Expect(k8s.Status().Update(f.ctx, dep)).To(Succeed())
	f.forwarderPod("fwd-a", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "forwarder", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "` + forwarderImage + `"`}}}}})
	_, err = r.Route(f.ctx, mw, forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	c = wakeOnRequest(f.get(mw))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonForwarderNotReady))
	f.g.Expect(c.Message).To(HaveSuffix(`which has no Ready pod: pod fwd-a: ImagePullBackOff: Back-off pulling image "` + forwarderImage + `"`))
	f.g.Expect(f.slices()).To(BeEmpty())

	// One Ready pod routes it.
	f.forwarderPod("fwd-b", readyStatus("10.2.0.9"))
	_, err = r.Route(f.ctx, mw, forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	c = wakeOnRequest(f.get(mw))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))
	f.g.Expect(sliceNames(f.slices())).To(Equal([]string{"api-napwake-ipv4"}))
}

func TestAForwarderLeftWhenTheFeatureIsTurnedOffStays(t *testing.T) {
	f := oneDoorman(t)
	f.service("api", negMarkers[1].opt)
	mw := f.pausing("api")
	_, err := f.router(withForwarder).Route(f.ctx, mw, forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	off := f.router()
	_, err = off.Route(f.ctx, f.get(mw), forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	_, err = off.Unroute(f.ctx, f.get(mw))
	f.g.Expect(err).NotTo(HaveOccurred())
	dep, err := f.forwarderDeployment("api")
	f.g.Expect(err).NotTo(HaveOccurred(), "the operator may no longer delete it")
	f.g.Expect(dep.Annotations).NotTo(HaveKey(forwarder.AnnotationDeleteAfter))
}

func TestAnUnreadableNEGAnnotationIsRoutedToTheDoormanWithAnInvalidSettingEvent(t *testing.T) {
	f := oneDoorman(t)
	f.service("api", withAnnotation(napwakev1alpha1.AnnotationGKENEGStatus, "k8s1-api"))
	mw := f.pausing("api")
	r := f.router(withForwarder)
	for range 2 {
		_, err := r.Route(f.ctx, f.get(mw), forwardedTemplate())
		f.g.Expect(err).NotTo(HaveOccurred())
	}
	f.g.Expect(recorder.count(mw, napwakev1alpha1.EventInvalidSetting)).To(Equal(1), "once a pause")
	c := wakeOnRequest(f.get(mw))
	f.g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))
	f.g.Expect(c.Message).To(ContainSubstring("Service api: reading cloud.google.com/neg-status: not a JSON object; not counted as in GKE NEGs"))
	s, err := f.slice("api-napwake-ipv4")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(s.Labels).NotTo(HaveKey("napwake.dev/forwarded"))
	_, err = f.forwarderDeployment("api")
	f.g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

// TestTheForwarderPodMeetsRestrictedPodSecurityEvenBelow1024: a Service
// whose target port is 80 gets a forwarder listening on 80 through the
// unprivileged-port sysctl, and its pod is admitted in a namespace that
// enforces the restricted level (the API server's own Pod Security
// admission, dry run).
func TestTheForwarderPodMeetsRestrictedPodSecurityEvenBelow1024(t *testing.T) {
	f := oneDoorman(t)
	ns := &corev1.Namespace{}
	f.g.Expect(k8s.Get(f.ctx, client.ObjectKey{Name: f.ns}, ns)).To(Succeed())
	ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}
	f.g.Expect(k8s.Update(f.ctx, ns)).To(Succeed())
	f.service("api", negMarkers[1].opt) // targetPort unset: 80
	mw := f.pausing("api")
	_, err := f.router(withForwarder).Route(f.ctx, mw, forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	dep, err := f.forwarderDeployment("api")
	f.g.Expect(err).NotTo(HaveOccurred())
	spec := dep.Spec.Template.Spec
	f.g.Expect(spec.SecurityContext.Sysctls).To(Equal([]corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "80"}}))
	f.g.Expect(*spec.SecurityContext.RunAsUser).To(Equal(int64(65532)))
	f.g.Expect(spec.Containers[0].Ports[0].ContainerPort).To(Equal(int32(80)))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "forwarder-pod", Namespace: f.ns, Labels: dep.Spec.Template.Labels}, Spec: spec}
	f.g.Expect(k8s.Create(f.ctx, pod, client.DryRunAll)).To(Succeed(), "admitted at the restricted level")
	pod.Spec.SecurityContext.RunAsNonRoot = nil
	pod.Spec.Containers[0].SecurityContext = nil
	f.g.Expect(k8s.Create(f.ctx, pod, client.DryRunAll)).To(MatchError(ContainSubstring("violates PodSecurity")), "the namespace really enforces")
}

// TestRouteWithAStaleCopyKeepsTheDoormanPort: Route called with a copy of
// the workload older than the status the last Route wrote (as a kick from
// the forwarders controller can, reading the cache) keeps each route's
// doorman port: a new port would roll the forwarder out again each time.
func TestRouteWithAStaleCopyKeepsTheDoormanPort(t *testing.T) {
	f := oneDoorman(t)
	negMarkers[2].serviceAPI(f)
	mw := f.pausing("api")
	stale := mw.DeepCopy()
	r := f.router(withForwarder)
	_, err := r.Route(f.ctx, mw, forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	port := f.get(mw).Status.Doorman.Routes[0].DoormanPort
	dep, err := f.forwarderDeployment("api")
	f.g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Route(f.ctx, stale, forwardedTemplate())
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(f.get(mw).Status.Doorman.Routes[0].DoormanPort).To(Equal(port))
	again, err := f.forwarderDeployment("api")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(again.Generation).To(Equal(dep.Generation), "the forwarder is not rolled out again")
}

// TestAForwarderPodLeavesTheSlicesWhenItTerminatesOrEnds: with the
// controllers running, a forwarder pod that begins to terminate leaves the
// forwarded slice at once (its Deployment does not change: envtest runs no
// Deployment controller), and a pod that has ended while its Ready
// condition still says True never goes in. What is left passes GKE's rules.
func TestAForwarderPodLeavesTheSlicesWhenItTerminatesOrEnds(t *testing.T) {
	f := oneDoorman(t)
	tmpl := f.deployment()
	f.service("api", negMarkers[2].opt)
	mw := f.pausing("api")
	// The pods first: no Route finds the forwarder not Ready, which would
	// look again RetryMin later whatever happens.
	f.forwarderPod("fwd-a", readyStatus("10.2.0.1"), func(p *corev1.Pod) { p.Finalizers = []string{"napwake.dev/test-keeps-it"} })
	f.forwarderPod("fwd-b", readyStatus("10.2.0.2"))
	ended := readyStatus("10.2.0.3")
	ended.Phase = corev1.PodFailed
	f.forwarderPod("fwd-c", ended)
	r := f.managedWith(withForwarder)
	_, err := r.Route(f.ctx, mw, tmpl)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.expectGKETakesTheForwardedSlices("10.2.0.1", "10.2.0.2")
	// What the start and the new Deployment set off is done: only the pod's
	// end can move the slice now.
	waitIdle(t, "napwake-forwarders")
	waitIdle(t, "napwake-routing")

	a := &corev1.Pod{}
	f.g.Expect(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "fwd-a"}, a)).To(Succeed())
	f.g.Expect(k8s.Delete(f.ctx, a)).To(Succeed())
	t.Cleanup(func() {
		base := a.DeepCopy()
		a.Finalizers = nil
		_ = k8s.Patch(context.Background(), a, client.MergeFrom(base))
	})
	f.g.Eventually(func() ([]string, error) {
		s, err := f.slice("api-napwake-ipv4")
		if err != nil {
			return nil, err
		}
		return endpointIPs(s), nil
	}).WithTimeout(4*time.Second).Should(Equal([]string{"10.2.0.2"}), "the terminating pod leaves the slice, before any retry (RetryMin, 5 s)")
	f.expectGKETakesTheForwardedSlices("10.2.0.2")
}
