//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
	"napwake.dev/shared/negcheck"
)

// The NEG forwarder on the local cluster: hack/e2e.sh installs the chart
// with doorman.negForwarder.enabled (NAPWAKE_NEG_FORWARDER) and nothing
// else, so forwarders find the doorman as they do on GKE: by the headless
// Service's DNS name, <release>-doorman-pods.<namespace>.svc, which the
// test bed's CoreDNS answers with the Ready doorman pods.
var _ = Describe("Napwake's NEG forwarder", Serial, func() {
	BeforeEach(func() {
		if os.Getenv("NAPWAKE_NEG_FORWARDER") == "" {
			Skip("the NEG forwarder is not installed: run the suite through hack/e2e.sh (make e2e)")
		}
	})
	It("wakes a paused workload whose Service is in GKE NEGs through its forwarder, and says ForwarderNotReady when the image cannot be pulled", func() {
		inNamespace("neg", nil, scenarioNEGForwarder)
	})
})

const negStatus = `{"network_endpoint_groups":{"80":"k8s1-e2e-api-80"},"zones":["europe-west1-b"]}`

// deployInNEGs deploys app behind a Service GKE's NEG controller has marked
// (cloud.google.com/neg-status), and waits for it to be Running.
func deployInNEGs(ctx context.Context, app framework.SampleApp) {
	_, err := fw.Clientset.AppsV1().Deployments(app.Namespace).Create(ctx, app.Deployment(), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	svc := app.Service()
	svc.Annotations = map[string]string{napwakev1alpha1.AnnotationGKENEGStatus: negStatus}
	_, err = fw.Clientset.CoreV1().Services(app.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, app.Namespace, app.Name) }).Should(Equal(app.Replicas))
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, app.Namespace, app.Name) }).
		WithTimeout(time.Minute).Should(Equal(napwakev1alpha1.PhaseRunning))
}

// expectForwardedRoute waits for the workload's one route, through the
// forwarder.
func expectForwardedRoute(ctx context.Context, ns, name string) {
	Eventually(func(g Gomega) {
		mw, err := fw.ManagedWorkload(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(mw.Status.Doorman).NotTo(BeNil())
		g.Expect(mw.Status.Doorman.Forwarded).To(BeTrue(), "status.doorman says the route goes through the forwarder")
		g.Expect(mw.Status.Doorman.Routes).To(HaveLen(1))
		g.Expect(mw.Status.Doorman.Routes[0].Forwarded).To(BeTrue())
		g.Expect(mw.Status.Doorman.Routes[0].DoormanPort).NotTo(BeZero())
	}).WithTimeout(90 * time.Second).Should(Succeed())
}

func forwarderOf(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	return fw.Clientset.AppsV1().Deployments(ns).Get(ctx, "napwake-forwarder-"+name, metav1.GetOptions{})
}

// readyForwarderIPs lists the Ready forwarder pods of the workload, sorted.
func readyForwarderIPs(ctx context.Context, ns, name string) ([]string, error) {
	pods, err := fw.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=napwake-forwarder,napwake.dev/workload=" + name})
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				ips = append(ips, p.Status.PodIP)
			}
		}
	}
	sort.Strings(ips)
	return ips, nil
}

func wakeOnRequestOf(ctx context.Context, ns, name string) metav1.Condition {
	mw, err := fw.ManagedWorkload(ctx, ns, name)
	Expect(err).NotTo(HaveOccurred())
	if c := apimeta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// scenarioNEGForwarder: a Service in NEGs (neg-status), its workload
// paused: two forwarder pods come up Ready in the workload's namespace, the
// Service's slice (napwake.dev/forwarded=true) leads to them, every version
// of it passes GKE's NEG controller's rules (shared/negcheck), and a request
// through the Service's ClusterIP reaches a forwarder, then the doorman
// (which records the forwarder as the caller), wakes the workload and gets
// the app's answer. After the wake the forwarder goes. With an image that
// cannot be pulled, ForwarderNotReady says why.
func scenarioNEGForwarder(ctx context.Context, ns string) {
	// Every forwarded slice this spec sees, each version, is checked; a
	// problem with a pod or node the slice names may last forwardedSettle
	// (the operator rewriting the slice after a forwarder pod changed).
	slicesSeen, err := fw.WatchForwardedSlices(ctx, ns, forwardedSettle)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { slicesSeen.Stop() })
	app := optedIn("api", ns, 1, longIdle)
	deployInNEGs(ctx, app)
	Expect(fw.RequestPause(ctx, ns, app.Name)).To(Succeed())
	expectForwardedRoute(ctx, ns, app.Name)
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).WithTimeout(90 * time.Second).Should(Equal(napwakev1alpha1.PhasePaused))

	var forwarders []string
	Eventually(func(g Gomega) {
		ips, err := readyForwarderIPs(ctx, ns, app.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ips).To(HaveLen(2), "two forwarder pods Ready in the workload's namespace")
		addrs, err := fw.DoormanSliceAddresses(ctx, ns, app.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(addrs).To(Equal(ips), "the Service's slice leads to the Ready forwarder pods")
		_, problems, err := negcheck.Live(ctx, fw.Client, ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(problems).To(BeEmpty(), "GKE's NEG controller takes every endpoint of the forwarded slice")
		forwarders = ips
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	slices, err := fw.DoormanSlices(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(slices).To(HaveLen(1))
	Expect(slices[0].Labels).To(HaveKeyWithValue(napwakev1alpha1.LabelForwarded, "true"))
	for _, e := range slices[0].Endpoints {
		Expect(e.TargetRef).NotTo(BeNil(), "each endpoint names its forwarder pod")
		Expect([]string{e.TargetRef.Kind, e.TargetRef.Namespace}).To(Equal([]string{"Pod", ns}))
		Expect(e.NodeName).NotTo(BeNil(), "and its node")
	}
	Expect(*slices[0].Ports[0].Port).To(Equal(int32(8080)), "the forwarder listens on the Service's target port")
	Expect(wakeOnRequestOf(ctx, ns, app.Name).Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))
	fwd, err := forwarderOf(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(fwd.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--doorman-host=napwake-doorman-pods."+napwakeNS+".svc"),
		"the forwarders dial the doorman by the headless Service's name, as on a real cluster")

	// The pause kept the app's pods until a forwarder was Ready: scaling
	// first would leave the Service with no endpoint while forwarders start.
	firstReady, err := firstForwarderReady(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() (time.Time, error) { return fw.ScaledDownAt(ctx, ns, app.Name) }).ShouldNot(BeZero())
	scaledDown, err := fw.ScaledDownAt(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(scaledDown).NotTo(BeTemporally("<", firstReady.Truncate(time.Second)),
		"the app was scaled to 0 only once a forwarder pod was Ready (both to the second)")
	// A caller through the ClusterIP meets kube-proxy's rules, which follow
	// the slice after kube-proxy's sync, as a load balancer's NEG would.
	Eventually(func() (bool, error) { return framework.KubeProxyLeadsTo(ctx, ns, app.Name, forwarders, 8080) }).
		WithTimeout(time.Minute).Should(BeTrue(), "kube-proxy sends the Service to the forwarders, and nowhere else")

	// From the node, through kube-proxy, as a load balancer's request would come.
	resp, err := framework.HTTPGet(ctx, serviceURL(app.Name, ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect([]any{resp.Status, resp.Body}).To(HaveExactElements(200, ContainSubstring("hello from the sample app")),
		"the held request got the app's answer")
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Annotations).To(HaveKeyWithValue(napwakev1alpha1.AnnotationLastRequestFrom, BeElementOf(forwarders)),
		"the doorman saw the request come from a forwarder pod")
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
	Eventually(func() ([]string, error) { return fw.DoormanSliceAddresses(ctx, ns, app.Name) }).Should(BeEmpty(), "once Running, the slices go")
	Eventually(func() bool { _, err := forwarderOf(ctx, ns, app.Name); return apierrors.IsNotFound(err) }).
		WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(BeTrue(), "the forwarder goes a minute after the route drained")

	expectForwarderNotReadyWithAnImageThatCannotBePulled(ctx, ns)

	report := slicesSeen.Stop()
	Expect(report.Versions).To(BeNumerically(">=", 1), "the watch saw the forwarded slice")
	Expect(report.Failures).To(BeEmpty(), "every version of every forwarded slice passes GKE's NEG controller's rules")
}

// firstForwarderReady is when the first of the workload's forwarder pods
// became Ready.
func firstForwarderReady(ctx context.Context, ns, workload string) (time.Time, error) {
	pods, err := fw.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: napwakev1alpha1.LabelAppName + "=" + napwakev1alpha1.AppNameForwarder})
	if err != nil {
		return time.Time{}, err
	}
	var first time.Time
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && (first.IsZero() || c.LastTransitionTime.Before(&metav1.Time{Time: first})) {
				first = c.LastTransitionTime.Time
			}
		}
	}
	if first.IsZero() {
		return first, fmt.Errorf("no forwarder pod of %s/%s is Ready", ns, workload)
	}
	return first, nil
}

// forwardedSettle is how long a forwarded slice may name a forwarder pod
// that has just stopped being Ready (or its node's state) before the
// operator rewrites it: it follows the pods themselves.
const forwardedSettle = 10 * time.Second

// expectForwarderNotReadyWithAnImageThatCannotBePulled reinstalls Napwake
// with a forwarder image tag that exists nowhere, pauses a second workload,
// and expects ForwarderNotReady naming the pull failure; then puts the
// install back.
func expectForwarderNotReadyWithAnImageThatCannotBePulled(ctx context.Context, ns string) {
	install := os.Getenv("NAPWAKE_E2E_INSTALL")
	Expect(install).NotTo(BeEmpty(), "hack/e2e.sh sets NAPWAKE_E2E_INSTALL")
	out, err := exec.CommandContext(ctx, "bash", "-c", install+" --set doorman.negForwarder.image.tag=e2e-missing").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	DeferCleanup(func(ctx context.Context) {
		out, err := exec.CommandContext(ctx, "bash", "-c", install).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})
	app := optedIn("pull", ns, 1, longIdle)
	deployInNEGs(ctx, app)
	Expect(fw.RequestPause(ctx, ns, app.Name)).To(Succeed())
	Eventually(func(g Gomega) {
		c := wakeOnRequestOf(ctx, ns, app.Name)
		g.Expect(c.Reason).To(Equal(napwakev1alpha1.ReasonForwarderNotReady))
		g.Expect(c.Message).To(MatchRegexp(`which has no Ready pod: .*pod napwake-forwarder-pull-[^:]*: (ErrImagePull|ImagePullBackOff)`))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	Expect(fw.DoormanSliceAddresses(ctx, ns, app.Name)).To(BeEmpty(), "no slice until a forwarder pod is Ready")
}
