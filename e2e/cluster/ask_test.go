//go:build e2e

package cluster

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

// Asking before waking (docs/design/ask.md; for users, docs/ask.md), in a real browser: Debian's
// Chromium, driven over the DevTools protocol from inside the node's
// network namespace, opens a paused workload that asks, sees the asleep
// page, presses Wake it and lands on the app. Over plain HTTP the click is
// judged by its Origin (Chromium sends fetch metadata over plain HTTP only to
// localhost); through Traefik terminating TLS, by Sec-Fetch-Site.

var _ = Describe("Napwake asking before waking", func() {
	BeforeEach(requireNapwake)
	It("shows a browser the asleep page over plain HTTP; a click wakes it, a second within the minute gets 429", Serial, func() {
		inNamespace("ask", nil, scenarioAskOverHTTP)
	})
	It("wakes on a click through Traefik terminating TLS, judged by fetch metadata", func() {
		inNamespace("askhttps", nil, scenarioAskOverHTTPS)
	})
})

// routedAskMessage is WakeOnRequest's message for a workload that asks.
const routedAskMessage = "the doorman asks a person's browser before waking the workload, and turns away other requests"

// asking is a sample app opted in by label that asks before waking.
func asking(name, ns string) framework.SampleApp {
	app := optedIn(name, ns, 1, longIdle)
	app.StartupDelay = 5 * time.Second
	app.Annotations[napwakev1alpha1.AnnotationWake] = napwakev1alpha1.WakeValueAsk
	return app
}

// pausedAsking deploys an app that asks and pauses it.
func pausedAsking(ctx context.Context, app framework.SampleApp) {
	deployRunning(ctx, app)
	pauseNow(ctx, app.Namespace, app.Name)
	mw, err := fw.ManagedWorkload(ctx, app.Namespace, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Spec.Wake.Mode).To(Equal(napwakev1alpha1.WakeAsk))
	Expect(conditionMessage(mw, napwakev1alpha1.ConditionWakeOnRequest)).To(Equal(routedAskMessage))
}

func conditionMessage(mw *napwakev1alpha1.ManagedWorkload, typ string) string {
	for _, c := range mw.Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

// screenshots is where the pages' screenshots go: docs/ask in the
// repository the suite runs from, or $NAPWAKE_E2E_SCREENSHOTS.
func screenshots() string {
	dir := envOr("NAPWAKE_E2E_SCREENSHOTS", filepath.Join("..", "..", "docs", "ask"))
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	return dir
}

func newBrowser(ctx context.Context, extra ...chromedp.ExecAllocatorOption) *framework.Browser {
	b, err := framework.NewBrowser(ctx, extra...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(b.Close)
	return b
}

func newTab(b *framework.Browser) *framework.Tab {
	t, err := b.NewTab()
	Expect(err).NotTo(HaveOccurred())
	return t
}

// expectPage checks the page a tab shows: its status and its heading.
func expectPage(t *framework.Tab, status int, heading string) {
	Expect(t.Status()).To(Equal(status))
	Expect(t.Text("h1")).To(Equal(heading))
}

const (
	asleepHeading = "This environment is asleep"
	wakingHeading = "This environment is waking up"
	button        = `button[type="submit"]`
)

// scaleOperator sets the operator's replicas and waits for them, so a click
// is stamped while nothing can start the workload yet: the second click then
// meets the first's stamp, whatever the phase would have become.
func scaleOperator(ctx context.Context, replicas int32) {
	deps := fw.Clientset.AppsV1().Deployments(napwakeNS)
	Eventually(func() error {
		d, err := deps.Get(ctx, "napwake-operator", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To(replicas)
		_, err = deps.Update(ctx, d, metav1.UpdateOptions{})
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
	Eventually(func(g Gomega) {
		d, err := deps.Get(ctx, "napwake-operator", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Status.ReadyReplicas).To(Equal(replicas))
		pods, err := fw.Clientset.CoreV1().Pods(napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(HaveLen(int(replicas)))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

// scenarioAskOverHTTP: what the doorman turns away is counted (and a TCP
// check and a browser shown the page are not); a browser opening the paused
// app gets the asleep page and wakes nothing; Wake it wakes it, the
// waking-up page follows; a second tab's click within the minute gets the
// 429 page; the first tab lands on the app.
func scenarioAskOverHTTP(ctx context.Context, ns string) {
	app := asking("web", ns)
	pausedAsking(ctx, app)
	url := serviceIPURL(ctx, ns, app.Name, "/")

	// What it turns away: the 503 to curl counts; a TCP check that connects
	// and closes, and a browser shown the page, do not.
	resp, err := framework.HTTPGet(ctx, url, map[string]string{"User-Agent": "curl/8.9.1", "Accept": "*/*"}, 10*time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(503))
	Expect(resp.Header.Get("Retry-After")).To(Equal("300"))
	Expect(resp.Body).To(ContainSubstring("This environment is asleep"))
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(strings.TrimSuffix(url, "/"), "http://")+":80", 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(c.Close()).To(Succeed())
	page, err := framework.HTTPGet(ctx, url, map[string]string{"User-Agent": chromeLikeUA, "Accept": "text/html"}, 10*time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(page.Status).To(Equal(200))
	for name, want := range map[string]string{"Cache-Control": "no-store", "X-Robots-Tag": "noindex", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY"} {
		Expect(page.Header.Get(name)).To(Equal(want), name)
	}
	Expect(page.Body).NotTo(ContainSubstring(ns), "the page names no namespace")
	Eventually(func(g Gomega) {
		mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(mw.Status.TurnedAway).NotTo(BeNil())
		g.Expect(mw.Status.TurnedAway.Requests).To(Equal(int64(1)))
		g.Expect(mw.Status.TurnedAway.PausedAt.Equal(&mw.Status.Pause.StartedAt)).To(BeTrue())
	}).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "the doorman flushes about once a minute")
	if plugin := os.Getenv("NAPWAKE_E2E_KUBECTL_NAPWAKE"); plugin != "" {
		out, err := exec.CommandContext(ctx, plugin, "status", "-n", ns).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(ContainSubstring("Turned requests away this pause"))
	}

	// The operator stays down from the first click to the second, so
	// nothing can mark the workload Resuming in between.
	scaleOperator(ctx, 0)
	restored := false
	DeferCleanup(func() {
		if !restored {
			scaleOperator(context.Background(), 1)
		}
	})

	b := newBrowser(ctx)
	dir := screenshots()
	first, second := newTab(b), newTab(b)
	Expect(first.Open(url, button)).To(Succeed())
	expectPage(first, 200, asleepHeading)
	Expect(first.Text(".addr")).To(Equal(strings.TrimPrefix(url, "http://")))
	Expect(first.Screenshot(filepath.Join(dir, "asleep.png"))).To(Succeed())
	Expect(second.Open(url, button)).To(Succeed())
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Annotations).NotTo(HaveKey(napwakev1alpha1.AnnotationLastRequest), "a page load wakes nothing")

	Expect(first.Click(button, ".dot")).To(Succeed())
	expectPage(first, 503, wakingHeading)
	Expect(first.Screenshot(filepath.Join(dir, "waking.png"))).To(Succeed())
	mw, err = fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Annotations).To(HaveKey(napwakev1alpha1.AnnotationLastRequest), "the click stamped the wake request")
	stamped := mw.Annotations[napwakev1alpha1.AnnotationLastRequest]

	Expect(second.Click(button, ".note")).To(Succeed())
	expectPage(second, 429, asleepHeading)
	Expect(second.Text(".note")).To(ContainSubstring("Try again in a minute"))
	Expect(second.Screenshot(filepath.Join(dir, "too-soon.png"))).To(Succeed())
	mw, err = fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Annotations[napwakev1alpha1.AnnotationLastRequest]).To(Equal(stamped), "the second click stamped nothing")

	scaleOperator(ctx, 1)
	restored = true
	// The waking-up page reloads every 3 s until the app answers.
	landOnApp(first)
	Expect(first.Text("body")).To(ContainSubstring("hello from the sample app"))
	Expect(first.Status()).To(Equal(200))
	Expect(first.Screenshot(filepath.Join(dir, "app.png"))).To(Succeed())
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
	mw, err = fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.LastActivitySource).To(Equal(napwakev1alpha1.SourceRequest))
	Expect(mw.Status.TurnedAway.Requests).To(Equal(int64(1)), "the last pause's count stays once awake")
	Expect(fw.EventReasons(ctx, ns, "ManagedWorkload", app.Name)).To(ContainElement(napwakev1alpha1.EventWokenByRequest))
}

// landOnApp waits, across the waking-up page's reloads, for the app's own
// page (which has no <main>, as the doorman's pages do).
func landOnApp(t *framework.Tab) {
	Eventually(func() error { return t.WaitVisible("body:not(:has(main))", 5*time.Second) }).
		WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// chromeLikeUA is a current browser's User-Agent, for requests the suite
// sends itself.
const chromeLikeUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"

// scenarioAskOverHTTPS: a browser reaches the paused app through Traefik,
// which terminates TLS for the app's host with the test bed's certificate,
// so the browser is on an HTTPS origin and sends fetch metadata; the click,
// judged by Sec-Fetch-Site, wakes it and the browser lands on the app.
func scenarioAskOverHTTPS(ctx context.Context, ns string) {
	app := asking("asks", ns)
	in, host := pausedBehindIngress(ctx, app)
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(conditionMessage(mw, napwakev1alpha1.ConditionWakeOnRequest)).To(Equal(routedAskMessage))
	url := "https://" + host + "/"

	b := newBrowser(ctx, framework.ResolveTo("*.napwake.test", in.Host()))
	tab := newTab(b)
	Eventually(func() error { return tab.Open(url, button) }).WithTimeout(time.Minute).Should(Succeed())
	expectPage(tab, 200, asleepHeading)
	Expect(tab.Text(".addr")).To(Equal(host + "/"))
	Expect(tab.Click(button, ".dot")).To(Succeed())
	expectPage(tab, 503, wakingHeading)
	landOnApp(tab)
	Expect(tab.Text("body")).To(ContainSubstring("hello from the sample app"))
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))

	// Traefik saw the click arrive over TLS carrying fetch metadata: the
	// Sec-Fetch path, not the Origin one.
	reqs, err := in.Requests(host)
	Expect(err).NotTo(HaveOccurred())
	Expect(reqs).To(ContainElement(SatisfyAll(
		HaveField("Method", "POST"), HaveField("Path", "/"), HaveField("TLS", Not(BeEmpty())),
		HaveField("SecFetchSite", "same-origin"), HaveField("SecFetchUser", "?1"))),
		"the click through Traefik's websecure entrypoint")
}

// serviceIPURL is the Service's address by its ClusterIP: the asleep page
// shows the address a person opened, and a name would carry the namespace
// the page must not name anywhere else.
func serviceIPURL(ctx context.Context, ns, name, path string) string {
	ip, err := fw.ClusterIP(ctx, ns, name)
	Expect(err).NotTo(HaveOccurred())
	return "http://" + ip + path
}
