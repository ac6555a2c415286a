//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

// The parts around the cluster that users have in theirs
// (hack/testbed/addons.sh): cluster DNS, the metrics API, and an ingress
// controller in front of Napwake.
var _ = Describe("The local cluster's surroundings", func() {
	It("resolves a Service by name (<service>.<namespace>.svc) from a pod, through the cluster DNS", func() {
		inNamespace("dns", nil, scenarioServiceByName)
	})
	It("serves a running pod's CPU and memory through the metrics API", func() {
		inNamespace("metrics", nil, scenarioPodMetrics)
	})
})

var _ = Describe("Napwake behind an ingress controller (Traefik)", func() {
	BeforeEach(func() {
		if os.Getenv("NAPWAKE_E2E_NAMESPACE") == "" {
			Fail("Napwake is not installed: run the suite through hack/e2e.sh (make e2e)")
		}
	})
	It("routes a paused app's Ingress to the doorman, holds a request through Traefik and answers it from the app", func() {
		inNamespace("traefik", nil, scenarioIngressHoldsRequest)
	})
	It("gives a browser coming through Traefik the waking-up page, and a reload reaches the app", func() {
		inNamespace("traefik-browser", nil, scenarioIngressBrowser)
	})
	It("wakes a paused app for a request over Traefik's TLS entrypoint and answers it from the app", func() {
		inNamespace("traefik-tls", nil, scenarioIngressTLS)
	})
})

// scenarioServiceByName: a pod calls a Service by <service>.<namespace>.svc
// and reaches it; the name resolves to the Service's ClusterIP.
func scenarioServiceByName(ctx context.Context, ns string) {
	app := framework.SampleApp{Name: "named", Namespace: ns, Replicas: 1, StartupDelay: time.Millisecond}
	Expect(fw.Deploy(ctx, app)).To(Succeed())
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, app.Name) }).Should(Equal(int32(1)))
	name := fmt.Sprintf("%s.%s.svc", app.Name, ns)
	ip, err := fw.ClusterIP(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	// hack/testbed/cluster.sh exec gives this process a pod's resolver.
	// A new Service reaches CoreDNS and kube-proxy through their watches,
	// usually within a second, but up to a minute and more when a spec
	// before this one restarted the API server (their informers back off):
	// wait, bounded, until this process resolves and reaches it, so the
	// client pod below judges a pod's DNS path, not how soon the add-ons
	// saw the Service.
	shown := time.Now()
	Eventually(func(g Gomega) {
		g.Expect(net.DefaultResolver.LookupHost(ctx, name)).To(Equal([]string{ip}), "the name resolves to the ClusterIP")
		r, err := framework.HTTPGet(ctx, "http://"+name+"/", nil, 2*time.Second)
		g.Expect(err).NotTo(HaveOccurred(), "kube-proxy forwards the ClusterIP")
		g.Expect(r.Status).To(Equal(http.StatusOK))
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(),
		"a new Service resolves through CoreDNS and answers through kube-proxy from the node")
	GinkgoWriter.Printf("the new Service resolved and answered from the node %s after it was Ready\n", time.Since(shown).Round(time.Millisecond))
	logs := clientGet(ctx, ns, "client", "http://"+name+"/")
	Expect(logs).To(ContainSubstring("200 OK"))
	Expect(logs).To(ContainSubstring("hello from the sample app"))
}

// scenarioPodMetrics: metrics-server reports a running pod's usage through
// the metrics API, which Napwake's default idle signal reads.
func scenarioPodMetrics(ctx context.Context, ns string) {
	app := framework.SampleApp{Name: "measured", Namespace: ns, Replicas: 1, StartupDelay: time.Millisecond}
	Expect(fw.Deploy(ctx, app)).To(Succeed())
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, app.Name) }).Should(Equal(int32(1)))
	pods, err := fw.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app.Name})
	Expect(err).NotTo(HaveOccurred())
	Expect(pods.Items).To(HaveLen(1))
	// metrics-server scrapes every 15 s and reports a pod after two scrapes.
	Eventually(func(g Gomega) {
		usage, err := fw.PodMetrics(ctx, ns, pods.Items[0].Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(usage).To(HaveKey("app"))
		g.Expect(usage["app"]).To(HaveKey(corev1.ResourceCPU))
		mem := usage["app"][corev1.ResourceMemory]
		g.Expect(mem.Value()).To(BeNumerically(">", 1<<20), "a running Go server uses more than 1 MiB")
	}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}

var ingressClient = map[string]string{"User-Agent": "e2e-client/1"}

// pausedBehindIngress deploys an opted-in app with an Ingress of class
// traefik for host <app>.napwake.test, waits until Traefik serves it,
// pauses it, and waits until Traefik balances the Service across the Ready
// doorman pods on the Service's doorman port: Traefik reads the doorman's
// EndpointSlices as they are written.
func pausedBehindIngress(ctx context.Context, app framework.SampleApp) (framework.Ingress, string) {
	in, err := framework.IngressFromEnv()
	Expect(err).NotTo(HaveOccurred())
	deployRunning(ctx, app)
	// Each scenario's app has a name of its own: its host is unique. The
	// waking-up page may show the host, and must show no namespace.
	host := app.Name + ".napwake.test"
	Expect(fw.Client.Create(ctx, framework.IngressFor(app, host))).To(Succeed())
	Eventually(func(g Gomega) {
		r, err := in.Get(ctx, false, host, "/", ingressClient, 5*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Status).To(Equal(200), "Traefik serves the Ingress")
	}).WithTimeout(time.Minute).Should(Succeed())
	pauseNow(ctx, app.Namespace, app.Name)
	Eventually(func(g Gomega) {
		mw, err := fw.ManagedWorkload(ctx, app.Namespace, app.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(mw.Status.Doorman).NotTo(BeNil())
		var port int32
		for _, r := range mw.Status.Doorman.Routes {
			if r.Service == app.Name && r.Port == 80 {
				port = r.DoormanPort
			}
		}
		g.Expect(port).NotTo(BeZero(), "a route for Service port 80")
		doormen, err := fw.ReadyDoormanIPs(ctx, napwakeNS)
		g.Expect(err).NotTo(HaveOccurred())
		var want []string
		for _, ip := range doormen {
			want = append(want, net.JoinHostPort(ip, strconv.Itoa(int(port))))
		}
		got, err := in.ServerAddresses(ctx, app.Namespace, app.Name, 80)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(ConsistOf(want), "Traefik's servers are the doorman pods on the doorman port")
	}).WithTimeout(time.Minute).Should(Succeed())
	return in, host
}

// expectWokenByRequest waits for the app to be Running again, woken by a
// request: the doorman's WokenByRequest event on its ManagedWorkload. (Its
// lastActivitySource may already say annotation: the held connection, once
// passed on, is stamped as activity by the doorman.)
func expectWokenByRequest(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
	Eventually(func() ([]string, error) { return fw.EventReasons(ctx, ns, "ManagedWorkload", name) }).
		Should(ContainElement(napwakev1alpha1.EventWokenByRequest))
	mw, err := fw.ManagedWorkload(ctx, ns, name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.LastActivitySource).To(BeElementOf(napwakev1alpha1.SourceRequest, napwakev1alpha1.SourceAnnotation))
}

// scenarioIngressHoldsRequest: a request through Traefik to a paused app is
// held by the doorman and answered by the app once it is up.
func scenarioIngressHoldsRequest(ctx context.Context, ns string) {
	app := optedIn("web", ns, 1, longIdle)
	in, host := pausedBehindIngress(ctx, app)
	resp, err := in.Get(ctx, false, host, "/", ingressClient, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(200), "the held request got the app's answer through Traefik: %s", resp.Body)
	Expect(resp.Body).To(ContainSubstring("hello from the sample app"))
	Expect(resp.Header.Get("X-Sampleapp-Pod")).To(HavePrefix("web-"))
	Expect(resp.Elapsed).To(BeNumerically(">=", app.StartupDelay), "held while the app started")
	expectWokenByRequest(ctx, ns, app.Name)
}

// scenarioIngressBrowser: a browser's request through Traefik gets the
// waking-up page at once; a reload after the app is up reaches it.
func scenarioIngressBrowser(ctx context.Context, ns string) {
	app := optedIn("site", ns, 1, longIdle)
	app.StartupDelay = 5 * time.Second
	in, host := pausedBehindIngress(ctx, app)
	browser := map[string]string{
		"User-Agent":     "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36",
		"Accept":         "text/html,application/xhtml+xml",
		"Sec-Fetch-Mode": "navigate",
	}
	resp, err := in.Get(ctx, false, host, "/", browser, 10*time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(503), "the waking-up page: %s", resp.Body)
	Expect(resp.Elapsed).To(BeNumerically("<", 2*time.Second), "the page answers at once")
	Expect(resp.Header.Get("Retry-After")).To(Equal("3"))
	Expect(resp.Header.Get("Cache-Control")).To(ContainSubstring("no-store"))
	Expect(resp.Body).NotTo(ContainSubstring(ns), "the page names no namespace")
	Eventually(func(g Gomega) {
		r, err := in.Get(ctx, false, host, "/", browser, 10*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Status).To(Equal(http.StatusOK))
		g.Expect(r.Body).To(ContainSubstring("hello from the sample app"))
	}).WithTimeout(2 * time.Minute).WithPolling(3 * time.Second).Should(Succeed())
	expectWokenByRequest(ctx, ns, app.Name)
}

// scenarioIngressTLS: Traefik terminates TLS with the test bed's certificate
// for the host, and a request over it to a paused app is held and answered.
func scenarioIngressTLS(ctx context.Context, ns string) {
	app := optedIn("secure", ns, 1, longIdle)
	in, host := pausedBehindIngress(ctx, app)
	resp, err := in.Get(ctx, true, host, "/", ingressClient, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred(), "TLS to Traefik, verified against the test bed's CA for %s", host)
	Expect(resp.Status).To(Equal(200), "%s", resp.Body)
	Expect(resp.Body).To(ContainSubstring("hello from the sample app"))
	expectWokenByRequest(ctx, ns, app.Name)
}
