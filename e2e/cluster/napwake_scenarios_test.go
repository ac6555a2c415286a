//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

// napwakeNS is where hack/install-napwake.sh installed the chart.
var napwakeNS = envOr("NAPWAKE_E2E_NAMESPACE", "napwake-system")

const (
	optIn = napwakev1alpha1.LabelEnabled
	// A long idleAfter keeps a workload up until a scenario pauses it on purpose.
	longIdle = "30m"
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// optedIn is a sample app labelled for Napwake with the given idle-after.
func optedIn(name, ns string, replicas int32, idleAfter string) framework.SampleApp {
	return framework.SampleApp{
		Name: name, Namespace: ns, Replicas: replicas, StartupDelay: 2 * time.Second,
		Labels:      map[string]string{optIn: "true"},
		Annotations: map[string]string{napwakev1alpha1.AnnotationIdleAfter: idleAfter},
	}
}

// deployRunning deploys app and waits for its ManagedWorkload to be Running
// with every replica Ready.
func deployRunning(ctx context.Context, app framework.SampleApp) {
	Expect(fw.Deploy(ctx, app)).To(Succeed())
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, app.Namespace, app.Name) }).Should(Equal(app.Replicas))
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, app.Namespace, app.Name) }).
		WithTimeout(time.Minute).Should(Equal(napwakev1alpha1.PhaseRunning))
}

// expectPausedAndRouted waits until the workload is Paused with no pod left
// and its Service's EndpointSlices lead to the Ready doorman pods.
func expectPausedAndRouted(ctx context.Context, ns, name string, timeout time.Duration) {
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, name) }).
		WithTimeout(timeout).Should(Equal(napwakev1alpha1.PhasePaused))
	Eventually(func() (bool, error) { return fw.PodsGone(ctx, ns, name) }).Should(BeTrue())
	Eventually(func(g Gomega) {
		doormen, err := fw.ReadyDoormanIPs(ctx, napwakeNS)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(doormen).NotTo(BeEmpty())
		addrs, err := fw.DoormanSliceAddresses(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(addrs).To(Equal(doormen), "the Service's Napwake EndpointSlices must list exactly the Ready doorman pods")
	}).WithTimeout(time.Minute).Should(Succeed())
}

// pauseNow asks for a pause and waits until it is Paused and routed.
func pauseNow(ctx context.Context, ns, name string) {
	// A pause requested in the second of the last request is called off by
	// it (pause-requested counts whole seconds, and the doorman's stamp
	// may read up to a second late: docs/design/time.md#comparing-times), as it is for a
	// person: ask for it in a later second.
	mw, err := fw.ManagedWorkload(ctx, ns, name)
	Expect(err).NotTo(HaveOccurred())
	if at, err := time.Parse(time.RFC3339Nano, mw.Annotations[napwakev1alpha1.AnnotationLastRequest]); err == nil {
		<-time.After(time.Until(at.Truncate(time.Second).Add(time.Second)))
	}
	Expect(fw.RequestPause(ctx, ns, name)).To(Succeed())
	expectPausedAndRouted(ctx, ns, name, 90*time.Second)
}

// serviceURL calls the Service by name, as users do: the cluster DNS
// resolves it in pods, and hack/testbed/cluster.sh exec gives the suite the
// same resolver.
func serviceURL(name, ns, path string) string {
	return "http://" + serviceName(name, ns) + path
}

func serviceName(name, ns string) string { return name + "." + ns + ".svc" }

// scenarioPausesWhenIdle (1): a Deployment opted in by label pauses after a
// short idleAfter; its pods go; its Service leads to the doorman.
func scenarioPausesWhenIdle(ctx context.Context, ns string) {
	app := optedIn("idle", ns, 2, "1m")
	deployRunning(ctx, app)
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.PauseAt).NotTo(BeNil(), "a Running workload says when it will pause")
	expectPausedAndRouted(ctx, ns, app.Name, 3*time.Minute)
	mw, err = fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.Pause).NotTo(BeNil())
	Expect(mw.Status.Pause.Replicas).To(Equal(int32(2)), "the pause keeps the replica count a wake restores")
	Expect(mw.Status.Pause.Reason).To(Equal(napwakev1alpha1.PauseIdle))
	Expect(meta(mw, napwakev1alpha1.ConditionWakeOnRequest)).To(Equal("True/" + napwakev1alpha1.ReasonDoormanRouted))
}

// scenarioWokenByRequest (2): an HTTP request to the Service by name from a client
// pod is held, the workload wakes, the response comes from the app.
func scenarioWokenByRequest(ctx context.Context, ns string) {
	app := optedIn("api", ns, 2, longIdle)
	deployRunning(ctx, app)
	pauseNow(ctx, ns, app.Name)

	logs := clientGet(ctx, ns, "client", serviceURL(app.Name, ns, "/"))
	Expect(logs).To(ContainSubstring("200 OK"), "the held request got the app's answer, not an error")
	Expect(logs).To(ContainSubstring("hello from the sample app"))

	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.LastActivitySource).To(Equal(napwakev1alpha1.SourceRequest))
	Expect(mw.Annotations).To(HaveKey(napwakev1alpha1.AnnotationLastRequest))
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, app.Name) }).Should(Equal(int32(2)), "a wake restores the replicas it had")
	Eventually(func() ([]string, error) { return fw.DoormanSliceAddresses(ctx, ns, app.Name) }).Should(BeEmpty(),
		"once Running, the doorman's slices go")
}

// clientGet runs the sample app's "get" in a client pod of the namespace
// and returns what it printed once it has finished.
func clientGet(ctx context.Context, ns, pod, url string) string {
	client := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "get", Image: framework.SampleAppImage, ImagePullPolicy: corev1.PullNever,
				Args:            []string{"get", "--user-agent", "e2e-client/1", url},
				SecurityContext: framework.SampleApp{}.PodSpec(nil, nil).Containers[0].SecurityContext,
			}},
		},
	}
	Expect(fw.Client.Create(ctx, client)).To(Succeed())
	logs := func() string {
		raw, err := fw.Clientset.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return "(no logs: " + err.Error() + ")"
		}
		return string(raw)
	}
	var state string
	Eventually(func() (corev1.PodPhase, error) {
		p, err := fw.Clientset.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		state = framework.PodState(p)
		if p.Status.Phase == corev1.PodFailed {
			return "", StopTrying("client pod " + pod + " failed: " + state + "; it printed: " + logs())
		}
		return p.Status.Phase, nil
	}).WithTimeout(3*time.Minute).Should(Equal(corev1.PodSucceeded), func() string { return "client pod " + pod + ": " + state })
	out := logs()
	GinkgoWriter.Printf("client pod %s saw: %s\n", pod, strings.SplitN(out, "\n", 2)[0])
	return out
}

// scenarioSharedService (11): a stable and a canary Deployment behind one
// Service, both paused: the Service is routed (the canary shares the
// stable one's route), and one request wakes them both.
func scenarioSharedService(ctx context.Context, ns string) {
	base := optedIn("shop", ns, 1, longIdle)
	Expect(fw.Client.Create(ctx, base.Service())).To(Succeed()) // selects app=shop: both tracks
	for _, track := range []string{"stable", "canary"} {
		d := base.Deployment()
		d.Name = "shop-" + track
		d.Spec.Selector.MatchLabels["track"] = track
		d.Spec.Template.Labels = map[string]string{"app": "shop", "track": track}
		d.Spec.Template.Spec = base.PodSpec([]string{"--startup-delay=2s"}, []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}})
		Expect(fw.Client.Create(ctx, d)).To(Succeed())
		Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, d.Name) }).Should(Equal(int32(1)))
		Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, d.Name) }).
			WithTimeout(time.Minute).Should(Equal(napwakev1alpha1.PhaseRunning))
	}
	for _, name := range []string{"shop-stable", "shop-canary"} {
		Expect(fw.RequestPause(ctx, ns, name)).To(Succeed())
		Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, name) }).
			WithTimeout(90 * time.Second).Should(Equal(napwakev1alpha1.PhasePaused))
		Eventually(func() (bool, error) { return fw.PodsGone(ctx, ns, name) }).Should(BeTrue())
	}
	Eventually(func(g Gomega) {
		doormen, err := fw.ReadyDoormanIPs(ctx, napwakeNS)
		g.Expect(err).NotTo(HaveOccurred())
		addrs, err := fw.DoormanSliceAddresses(ctx, ns, "shop")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(addrs).To(Equal(doormen), "Service shop leads to the doorman")
		// Whichever paused first wrote the slice; the other shares its route.
		sharing := 0
		for name, other := range map[string]string{"shop-stable": "shop-canary", "shop-canary": "shop-stable"} {
			mw, err := fw.ManagedWorkload(ctx, ns, name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(meta(mw, napwakev1alpha1.ConditionWakeOnRequest)).To(Equal("True/"+napwakev1alpha1.ReasonDoormanRouted), name)
			c := apimeta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest)
			if strings.Contains(c.Message, "shop through ManagedWorkload "+other+"'s route") {
				sharing++
			}
		}
		g.Expect(sharing).To(Equal(1), "one writes the Service's slice, the other shares it")
	}).WithTimeout(time.Minute).Should(Succeed())

	logs := clientGet(ctx, ns, "client", serviceURL("shop", ns, "/"))
	Expect(logs).To(ContainSubstring("200 OK"), "the held request got an answer, not an error")
	for _, name := range []string{"shop-stable", "shop-canary"} {
		Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, name) }).
			WithTimeout(time.Minute).Should(Equal(napwakev1alpha1.PhaseRunning), name+" woken by the one request")
		mw, err := fw.ManagedWorkload(ctx, ns, name)
		Expect(err).NotTo(HaveOccurred())
		Expect(mw.Status.LastActivitySource).To(Equal(napwakev1alpha1.SourceRequest), name)
		Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, name) }).Should(Equal(int32(1)))
	}
}

// scenarioColdStartOverhead measures, over n wakes, the time from a request
// to its response minus the app's own pod-created → Ready time, and reports
// the p50 and p99; and that time split into its four parts (wakeSplit),
// each between two moments the test's watches saw (framework.WatchWake,
// WatchPodReady), since status.lastWake counts whole seconds.
func scenarioColdStartOverhead(ctx context.Context, ns string, n int) []time.Duration {
	app := optedIn("cold", ns, 1, longIdle)
	app.StartupDelay = time.Second
	deployRunning(ctx, app)
	url := serviceURL(app.Name, ns, "/")
	var overheads []time.Duration
	var split wakeSplit
	for i := 0; i < n; i++ {
		pauseNow(ctx, ns, app.Name)
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		timer, done, err := fw.WatchPodReady(wctx, ns, app.Name)
		Expect(err).NotTo(HaveOccurred())
		wake, wakeSeen, err := fw.WatchWake(wctx, ns, app.Name)
		Expect(err).NotTo(HaveOccurred())
		sent := time.Now()
		resp, err := framework.HTTPGet(ctx, url, map[string]string{"User-Agent": "e2e-coldstart/1"}, 2*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(Equal(200))
		<-done
		<-wakeSeen
		cancel()
		Expect(timer.Ready.IsZero()).To(BeFalse())
		Expect(wake.Stamped.IsZero() || wake.Scaled.IsZero()).To(BeFalse(), "the stamp and the scale were both seen")
		overhead := resp.Elapsed - timer.Ready.Sub(timer.Created)
		overheads = append(overheads, overhead)
		parts := split.add(sent, wake, timer, sent.Add(resp.Elapsed))
		GinkgoWriter.Printf("wake %d: response in %s, pod created→Ready %s, overhead %s (%s)\n",
			i+1, resp.Elapsed.Round(time.Millisecond), timer.Ready.Sub(timer.Created).Round(time.Millisecond), overhead.Round(time.Millisecond), parts)
		Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
	}
	p50, p99, worst := percentiles(overheads)
	AddReportEntry("cold-start overhead", fmt.Sprintf("n=%d p50=%s p99=%s max=%s; %s", n, p50, p99, worst, split.summary()))
	if path := os.Getenv("NAPWAKE_E2E_COLDSTART_OUT"); path != "" {
		_ = os.WriteFile(path, []byte(fmt.Sprintf("n=%d p50_ms=%d p99_ms=%d max_ms=%d %s\n",
			n, p50.Milliseconds(), p99.Milliseconds(), worst.Milliseconds(), split.fields())), 0o644)
	}
	return overheads
}

// wakeSplit keeps, per wake, the four parts Napwake's added time is made
// of, each between two moments the test's own clock and watches saw:
//
//   - doorman: the request sent → the doorman's last-request stamp on the
//     ManagedWorkload (the connection's way in, its first bytes read, the
//     stamp's write);
//   - operator: the stamp → the Deployment's spec.replicas above zero;
//   - kube: the scale → the first pod created (the Deployment and
//     ReplicaSet controllers, which any scale from zero pays);
//   - pass: the pod Ready → the response (the doorman seeing Ready, its
//     dial, the held bytes, the app's answer).
//
// Their sum is the added time to within the watches' jitter.
type wakeSplit struct{ doorman, operator, kube, pass []time.Duration }

var wakeParts = []string{"doorman", "operator", "kube", "pass"}

func (w *wakeSplit) add(sent time.Time, wake *framework.WakeTimer, pod *framework.PodReadyTimer, answered time.Time) string {
	ds := []time.Duration{wake.Stamped.Sub(sent), wake.Scaled.Sub(wake.Stamped), pod.Created.Sub(wake.Scaled), answered.Sub(pod.Ready)}
	for i, l := range w.lists() {
		*l = append(*l, ds[i])
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = wakeParts[i] + " " + d.Round(time.Millisecond).String()
	}
	return strings.Join(out, ", ")
}

func (w *wakeSplit) lists() []*[]time.Duration {
	return []*[]time.Duration{&w.doorman, &w.operator, &w.kube, &w.pass}
}

// summary is "doorman p50=… p99=…; operator …" for the report.
func (w *wakeSplit) summary() string {
	out := make([]string, 0, len(wakeParts))
	for i, l := range w.lists() {
		p50, p99, _ := percentiles(*l)
		out = append(out, fmt.Sprintf("%s p50=%s p99=%s", wakeParts[i], p50, p99))
	}
	return strings.Join(out, "; ")
}

// fields is "doorman_p50_ms=… doorman_p99_ms=… …" for the bench file.
func (w *wakeSplit) fields() string {
	out := make([]string, 0, 2*len(wakeParts))
	for i, l := range w.lists() {
		p50, p99, _ := percentiles(*l)
		out = append(out, fmt.Sprintf("%s_p50_ms=%d %s_p99_ms=%d", wakeParts[i], p50.Milliseconds(), wakeParts[i], p99.Milliseconds()))
	}
	return strings.Join(out, " ")
}

// percentiles sorts ds and returns its p50, p99 and largest, to the
// millisecond (zero for none).
func percentiles(ds []time.Duration) (p50, p99, worst time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return ms(ds[len(ds)/2]), ms(ds[(len(ds)*99+99)/100-1]), ms(ds[len(ds)-1])
}

// scenarioBrowserGetsWakingPage (3): a browser-like request gets the waking-up
// page with the spec's headers; a later reload reaches the app.
func scenarioBrowserGetsWakingPage(ctx context.Context, ns string) {
	app := optedIn("web", ns, 1, longIdle)
	app.StartupDelay = 5 * time.Second
	deployRunning(ctx, app)
	pauseNow(ctx, ns, app.Name)
	browser := map[string]string{
		"User-Agent":     "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36",
		"Accept":         "text/html,application/xhtml+xml",
		"Sec-Fetch-Mode": "navigate",
	}
	url := serviceURL(app.Name, ns, "/")
	resp, err := framework.HTTPGet(ctx, url, browser, 10*time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(503))
	Expect(resp.Elapsed).To(BeNumerically("<", 2*time.Second), "the page answers at once")
	Expect(resp.Header.Get("Retry-After")).To(Equal("3"))
	Expect(resp.Header.Get("Cache-Control")).To(ContainSubstring("no-store"))
	Expect(resp.Header.Get("X-Robots-Tag")).To(ContainSubstring("noindex"))
	Expect(resp.Header.Get("Content-Security-Policy")).To(ContainSubstring("img-src data:"))
	// The page shows the address the person opened (here the Service's
	// name, which holds the namespace) and otherwise names no namespace.
	Expect(resp.Body).To(ContainSubstring(serviceName(app.Name, ns)), "the page shows the address opened")
	Expect(strings.ReplaceAll(resp.Body, serviceName(app.Name, ns), "")).NotTo(ContainSubstring(ns), "the page names no namespace")
	Expect(resp.Body).NotTo(ContainSubstring("<script"), "the page runs no script")
	// The browser reloads every 3 seconds; the first reload after a pod is Ready reaches the app.
	Eventually(func(g Gomega) {
		r, err := framework.HTTPGet(ctx, url, browser, 10*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Status).To(Equal(200))
		g.Expect(r.Body).To(ContainSubstring("hello from the sample app"))
	}).WithTimeout(2 * time.Minute).WithPolling(3 * time.Second).Should(Succeed())
}

// scenarioProbesWakeNothing (4): a known probe gets 503, a hidden file 404,
// and neither wakes the workload for a minute after.
func scenarioProbesWakeNothing(ctx context.Context, ns string) {
	app := optedIn("quiet", ns, 1, longIdle)
	deployRunning(ctx, app)
	pauseNow(ctx, ns, app.Name)
	probe, err := framework.HTTPGet(ctx, serviceURL(app.Name, ns, "/healthz"), map[string]string{"User-Agent": "kube-probe/1.37"}, 10*time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(probe.Status).To(Equal(503))
	Expect(probe.Close).To(BeTrue(), "a probe's 503 says Connection: close")
	hidden, err := framework.HTTPGet(ctx, serviceURL(app.Name, ns, "/.env"), map[string]string{"User-Agent": "curl/8.0"}, 10*time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(hidden.Status).To(Equal(404))
	Consistently(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).
		WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Equal(napwakev1alpha1.PhasePaused))
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Annotations).NotTo(HaveKey(napwakev1alpha1.AnnotationLastRequest))
}

// scenarioServerSpeaksFirst (5): a client that connects and waits, as for
// MySQL, wakes the workload after 3 s of silence and gets the greeting.
func scenarioServerSpeaksFirst(ctx context.Context, ns string) {
	app := optedIn("db", ns, 1, longIdle)
	app.Greet = true
	deployRunning(ctx, app)
	pauseNow(ctx, ns, app.Name)
	line, elapsed, err := framework.DialAndRead(ctx, serviceName(app.Name, ns)+":3306", 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(line).To(HavePrefix("GREETING from db-"))
	Expect(elapsed).To(BeNumerically(">=", 3*time.Second), "silence for 3 s is what wakes it")
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
}

// scenarioStatefulSet (6): a StatefulSet pauses and wakes with its replica
// count intact.
func scenarioStatefulSet(ctx context.Context, ns string) {
	app := optedIn("store", ns, 3, longIdle)
	Expect(fw.DeployStatefulSet(ctx, app)).To(Succeed())
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
	Eventually(func() (int32, error) { return fw.StatefulSetReadyReplicas(ctx, ns, app.Name) }).Should(Equal(int32(3)))
	pauseNow(ctx, ns, app.Name)
	s, err := fw.Clientset.AppsV1().StatefulSets(ns).Get(ctx, app.Name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(ptr.Deref(s.Spec.Replicas, -1)).To(Equal(int32(0)))
	Expect(fw.Annotate(ctx, ns, app.Name, map[string]string{napwakev1alpha1.AnnotationWakeRequested: time.Now().UTC().Format(time.RFC3339)})).To(Succeed())
	Eventually(func() (int32, error) { return fw.StatefulSetReadyReplicas(ctx, ns, app.Name) }).Should(Equal(int32(3)))
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.LastActivitySource).To(Equal(napwakev1alpha1.SourceWakeRequested))
}

// scenarioDoormanPodDeleted (7): deleting a doorman pod while workloads are
// paused moves their routes to the other, and a request still wakes.
func scenarioDoormanPodDeleted(ctx context.Context, ns string) {
	apps := []framework.SampleApp{optedIn("one", ns, 1, longIdle), optedIn("two", ns, 1, longIdle)}
	for _, a := range apps {
		deployRunning(ctx, a)
		pauseNow(ctx, ns, a.Name)
	}
	pods, err := fw.Clientset.CoreV1().Pods(napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=doorman"})
	Expect(err).NotTo(HaveOccurred())
	Expect(len(pods.Items)).To(BeNumerically(">=", 2))
	victim := pods.Items[0]
	Expect(fw.Clientset.CoreV1().Pods(napwakeNS).Delete(ctx, victim.Name, metav1.DeleteOptions{})).To(Succeed())
	for _, a := range apps {
		Eventually(func() ([]string, error) { return fw.DoormanSliceAddresses(ctx, ns, a.Name) }).
			WithTimeout(30*time.Second).ShouldNot(ContainElement(victim.Status.PodIP), "routes leave the stopping doorman pod")
	}
	resp, err := framework.HTTPGet(ctx, serviceURL("one", ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(200))
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, "one") }).Should(Equal(napwakev1alpha1.PhaseRunning))
	Expect(fw.Phase(ctx, ns, "two")).To(Equal(napwakev1alpha1.PhasePaused), "waking one workload wakes no other")
}

// scenarioOperatorRestartMidPause (8): the operator restarts in the middle of a
// pause; the workload ends Paused or Running, never lost.
func scenarioOperatorRestartMidPause(ctx context.Context, ns string) {
	app := optedIn("crash", ns, 2, longIdle)
	deployRunning(ctx, app)
	Expect(fw.RequestPause(ctx, ns, app.Name)).To(Succeed())
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).
		WithPolling(20 * time.Millisecond).Should(Or(Equal(napwakev1alpha1.PhasePausing), Equal(napwakev1alpha1.PhasePaused)))
	Expect(fw.Clientset.CoreV1().Pods(napwakeNS).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})).To(Succeed())
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).
		WithTimeout(3 * time.Minute).Should(Equal(napwakev1alpha1.PhasePaused))
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.Pause.Replicas).To(Equal(int32(2)), "the replica count survived the restart")
	Expect(fw.Annotate(ctx, ns, app.Name, map[string]string{napwakev1alpha1.AnnotationWakeRequested: time.Now().UTC().Format(time.RFC3339)})).To(Succeed())
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, app.Name) }).Should(Equal(int32(2)))
}

// scenarioKubectlPlugin (9): kubectl napwake status, wake --wait and pause --wait.
func scenarioKubectlPlugin(ctx context.Context, ns string) {
	run := kubectlNapwake(ctx, ns)
	app := optedIn("cli", ns, 1, longIdle)
	deployRunning(ctx, app)
	out := run("pause", app.Name, "--wait", "--timeout", "2m")
	Expect(out).To(ContainSubstring("Paused"))
	Expect(fw.Phase(ctx, ns, app.Name)).To(Equal(napwakev1alpha1.PhasePaused))
	out = run("status")
	Expect(out).To(ContainSubstring(app.Name))
	Expect(out).To(ContainSubstring("Paused"))
	out = run("wake", app.Name, "--wait", "--timeout", "2m")
	Expect(out).To(ContainSubstring("Running"))
	Expect(fw.Phase(ctx, ns, app.Name)).To(Equal(napwakev1alpha1.PhaseRunning))
}

// kubectlNapwake runs the plugin hack/e2e.sh built in namespace ns,
// failing the spec when it fails, and returns what it printed.
func kubectlNapwake(ctx context.Context, ns string) func(args ...string) string {
	plugin := os.Getenv("NAPWAKE_E2E_KUBECTL_NAPWAKE")
	Expect(plugin).NotTo(BeEmpty(), "hack/e2e.sh sets NAPWAKE_E2E_KUBECTL_NAPWAKE")
	return func(args ...string) string {
		out, err := exec.CommandContext(ctx, plugin, append(args, "-n", ns)...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		return string(out)
	}
}

// scenarioDoormanUpgrade (10): upgrading only the doorman's image with Helm
// leaves paused workloads paused and routed, and the operator untouched.
func scenarioDoormanUpgrade(ctx context.Context, ns string) {
	upgrade := os.Getenv("NAPWAKE_E2E_UPGRADE_DOORMAN")
	Expect(upgrade).NotTo(BeEmpty(), "hack/e2e.sh sets NAPWAKE_E2E_UPGRADE_DOORMAN")
	app := optedIn("upg", ns, 1, longIdle)
	deployRunning(ctx, app)
	pauseNow(ctx, ns, app.Name)
	before, err := fw.Clientset.CoreV1().Pods(napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	Expect(err).NotTo(HaveOccurred())
	out, err := exec.CommandContext(ctx, "bash", "-c", upgrade).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	after, err := fw.Clientset.CoreV1().Pods(napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	Expect(err).NotTo(HaveOccurred())
	Expect(uids(after.Items)).To(Equal(uids(before.Items)), "the operator's pods are untouched")
	Expect(fw.Phase(ctx, ns, app.Name)).To(Equal(napwakev1alpha1.PhasePaused))
	expectPausedAndRouted(ctx, ns, app.Name, time.Minute)
	resp, err := framework.HTTPGet(ctx, serviceURL(app.Name, ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(200))
}

// scenarioActivityQuery: a queue worker no request reaches, with an
// activity query (napwake.dev/activity-query) that the operator asks a
// stand-in Prometheus (hack/e2e.sh installs the operator pointing at it,
// with a bearer token and a tenant header from an http_config Secret, and
// the stand-in answers 401 without them).
// While the query returns above zero the worker stays up past its
// idleAfter and says why; once it returns zero the worker pauses after
// idleAfter; when it returns above zero again the worker wakes with
// lastActivitySource prometheus, its replicas restored.
func scenarioActivityQuery(ctx context.Context, ns string) {
	// The operator was installed with prometheusURL
	// http://prometheus.<this namespace>.svc: a Prometheus at a fixed name.
	promNS := os.Getenv("NAPWAKE_E2E_PROMETHEUS_NAMESPACE")
	if promNS == "" {
		Fail("NAPWAKE_E2E_PROMETHEUS_NAMESPACE is not set: run the suite through hack/e2e.sh (make e2e)")
	}
	_, err := fw.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: promNS}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { fw.DeleteNamespace(ctx, promNS) })
	// It answers only queries with the credentials hack/e2e.sh gave the
	// operator through an http_config Secret (operator.prometheusHTTPConfig).
	token, tenant := os.Getenv("NAPWAKE_PROMETHEUS_TOKEN"), os.Getenv("NAPWAKE_PROMETHEUS_TENANT")
	Expect(token).NotTo(BeEmpty(), "hack/e2e.sh sets NAPWAKE_PROMETHEUS_TOKEN")
	prom := framework.SampleApp{Name: "prometheus", Namespace: promNS, Replicas: 1, StartupDelay: time.Millisecond, StandInPrometheus: true,
		PrometheusRequires: map[string]string{"Authorization": "Bearer " + token, "X-Scope-OrgID": tenant}}
	Expect(fw.Deploy(ctx, prom)).To(Succeed())
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, promNS, prom.Name) }).Should(Equal(int32(1)))
	setActivity := func(v string) {
		GinkgoHelper()
		Eventually(func() (int, error) {
			r, err := framework.HTTPGet(ctx, serviceURL(prom.Name, promNS, "/set-activity?value="+v), nil, 5*time.Second)
			if err != nil {
				return 0, err
			}
			return r.Status, nil
		}).Should(Equal(http.StatusOK), "setting the stand-in Prometheus's answer")
	}
	source := func() string {
		mw, err := fw.ManagedWorkload(ctx, ns, "worker")
		if err != nil {
			return err.Error()
		}
		return mw.Status.LastActivitySource
	}

	setActivity("3")
	worker := optedIn("worker", ns, 2, "1m")
	worker.Annotations[napwakev1alpha1.AnnotationActivityQuery] = `sum(queue_depth{queue="jobs"})`
	deployRunning(ctx, worker)
	Eventually(source).WithTimeout(time.Minute).Should(Equal(napwakev1alpha1.SourcePrometheus),
		"the query's answer is the worker's activity")
	mw, err := fw.ManagedWorkload(ctx, ns, worker.Name)
	Expect(err).NotTo(HaveOccurred())
	signals := apimeta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionActivitySignals)
	Expect(signals).NotTo(BeNil())
	Expect(signals.Message).To(ContainSubstring("its Prometheus activity query"), "ActivitySignals names the query as a signal in use")
	Consistently(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, worker.Name) }).
		WithTimeout(75*time.Second).WithPolling(5*time.Second).Should(Equal(napwakev1alpha1.PhaseRunning),
		"a worker whose queue has work stays up past its idleAfter (1m)")

	setActivity("0")
	expectPausedAndRouted(ctx, ns, worker.Name, 3*time.Minute)

	setActivity("2")
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, worker.Name) }).
		WithTimeout(90*time.Second).Should(Equal(napwakev1alpha1.PhaseRunning), "work in the queue wakes it (queries every 30 s)")
	Expect(source()).To(Equal(napwakev1alpha1.SourcePrometheus))
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, worker.Name) }).
		WithTimeout(time.Minute).Should(Equal(int32(2)), "a wake restores the replicas it had")
}

func uids(pods []corev1.Pod) []string {
	var u []string
	for _, p := range pods {
		u = append(u, string(p.UID))
	}
	sort.Strings(u)
	return u
}

// meta renders a condition as "Status/Reason" for compact assertions.
func meta(mw *napwakev1alpha1.ManagedWorkload, condType string) string {
	for _, c := range mw.Status.Conditions {
		if c.Type == condType {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return "absent"
}
