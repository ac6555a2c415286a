//go:build e2e

package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

// Sizes the 2-core test bed carries reliably (the issue asks for 500
// connections to 20 workloads, 200 new connections a second).
const (
	outageWorkloads   = 20
	outageConnections = 25 // per workload: 500 in all
	newConnEvery      = 5 * time.Millisecond
)

// scenarioAPIServerAway: 20 paused workloads, 500 held connections, and
// kube-apiserver stopped for 30 s while they are held. Half the workloads
// were already waking when it stopped; the other half's callers came
// during the outage. Every connection is answered by the app, and every
// workload's wake has begun within 10 s of the API server's return.
func scenarioAPIServerAway(ctx context.Context, ns string) {
	var apps []framework.SampleApp
	for i := range outageWorkloads {
		a := optedIn(fmt.Sprintf("w%02d", i), ns, 1, longIdle)
		a.StartupDelay = time.Second
		a.Annotations[napwakev1alpha1.AnnotationWakeMaxWait] = "3m"
		apps = append(apps, a)
	}
	deployPaused(ctx, apps)
	waking, later := apps[:outageWorkloads/2], apps[outageWorkloads/2:]
	answers := make(chan string, outageWorkloads*outageConnections)
	hold := func(group []framework.SampleApp) {
		for _, a := range group {
			for range outageConnections {
				go func() {
					r, err := framework.HTTPGet(ctx, serviceURL(a.Name, ns, "/"), map[string]string{"User-Agent": "e2e-outage/1"}, 3*time.Minute)
					switch {
					case err != nil:
						answers <- a.Name + ": " + err.Error()
					case r.Status != http.StatusOK:
						answers <- a.Name + ": status " + strconv.Itoa(r.Status)
					default:
						answers <- ""
					}
				}()
			}
		}
	}
	hold(waking)
	for _, a := range waking {
		Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, a.Name) }).WithTimeout(30*time.Second).
			Should(Or(Equal(napwakev1alpha1.PhaseResuming), Equal(napwakev1alpha1.PhaseRunning)), a.Name+" woken before the outage")
	}

	apiserver := func(verb string) {
		GinkgoHelper()
		out, err := exec.CommandContext(ctx, testbed(), "apiserver", verb).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	}
	DeferCleanup(func() { apiserver("start") }) // a no-op once it runs
	// Killed, it is gone as in a crash or a partition: its address stays
	// in the kubernetes Service. (Stopped with SIGTERM, it takes its address
	// out first, and kube-proxy refuses every pod's calls to it until its
	// watch comes back, 15 s and more after the return on the test bed.)
	apiserver("kill")
	stopped := time.Now()
	hold(later)
	<-time.After(time.Until(stopped.Add(30 * time.Second))) // the outage's length, not a wait for something
	apiserver("start")
	back := time.Now()
	GinkgoWriter.Printf("kube-apiserver away %s (stopped to ready again)\n", back.Sub(stopped).Round(time.Millisecond))
	DeferCleanup(func() { awaitTestBedCaughtUp(ctx, ns, back) })

	// Every wake has begun (Resuming or past it) within 10 s of the return.
	woke := map[string]time.Duration{}
	Eventually(func() []string {
		var paused []string
		for _, a := range apps {
			if _, ok := woke[a.Name]; ok {
				continue
			}
			if p := fw.Phase(ctx, ns, a.Name); p == napwakev1alpha1.PhaseResuming || p == napwakev1alpha1.PhaseRunning {
				woke[a.Name] = time.Since(back)
				continue
			}
			paused = append(paused, a.Name)
		}
		return paused
	}).WithTimeout(time.Until(back.Add(10*time.Second))).WithPolling(100*time.Millisecond).Should(BeEmpty(),
		"every workload's wake begins within 10 s of the API server's return")
	GinkgoWriter.Printf("wakes begun after the return: %v\n", woke)

	var lost []string
	for range outageWorkloads * outageConnections {
		select {
		case a := <-answers:
			if a != "" {
				lost = append(lost, a)
			}
		case <-time.After(3 * time.Minute):
			Fail("a held connection had no outcome within its 3-minute maxWait")
		}
	}
	Expect(lost).To(BeEmpty(), "every held connection had time left in maxWait: none may be lost")
	for _, a := range apps {
		Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, a.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning), a.Name)
	}
	AddReportEntry("API server away", fmt.Sprintf("%d workloads, %d held connections, away %s, all answered",
		outageWorkloads, outageWorkloads*outageConnections, back.Sub(stopped).Round(time.Second)))
}

// awaitTestBedCaughtUp restarts the test bed's CoreDNS and kube-proxy and
// waits until they serve a Service created after the API server's return:
// CoreDNS resolves it and kube-proxy forwards to it. Both watch the API
// server through client-go, whose informers back off to 30 s and more
// between tries while it is away: after a 32 s outage, left alone, they
// took 82 s (CoreDNS) and 90 s (kube-proxy) to see a new Service on the
// test bed, where Napwake's own watches were back within 2 s. The specs
// after this one judge Napwake, not how soon the cluster's add-ons
// recover, so they start once a new Service works end to end. It runs
// after this spec's own checks, which saw the add-ons as they were.
func awaitTestBedCaughtUp(ctx context.Context, ns string, back time.Time) {
	out, err := exec.CommandContext(ctx, testbed(), "restart-watchers").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "restarting the test bed's CoreDNS and kube-proxy: %s", out)
	probe := framework.SampleApp{Name: "probe", Namespace: ns, Replicas: 1, StartupDelay: time.Millisecond}
	Expect(fw.Deploy(ctx, probe)).To(Succeed())
	ip, err := fw.ClusterIP(ctx, ns, probe.Name)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		addrs, err := net.DefaultResolver.LookupHost(ctx, serviceName(probe.Name, ns))
		g.Expect(err).NotTo(HaveOccurred(), "CoreDNS has not seen the new Service")
		g.Expect(addrs).To(Equal([]string{ip}))
		r, err := framework.HTTPGet(ctx, serviceURL(probe.Name, ns, "/"), nil, 2*time.Second)
		g.Expect(err).NotTo(HaveOccurred(), "kube-proxy does not forward to the new Service yet")
		g.Expect(r.Status).To(Equal(http.StatusOK))
	}).WithTimeout(4*time.Minute).WithPolling(time.Second).Should(Succeed(),
		"the test bed's DNS and service proxy see a Service created after the API server's return")
	GinkgoWriter.Printf("the test bed's CoreDNS and kube-proxy served a new Service %s after the API server's return\n",
		time.Since(back).Round(time.Second))
}

// scenarioDoormanRolloutMidTraffic: a doorman rollout while new
// connections arrive at paused Services (that ask before waking, so each
// gets the doorman's 503 and none wakes them) and 100 long streams pass
// through the doorman: no connection refused, every stream complete, the
// old pods exit 0 before their grace period. Then one doorman pod is
// SIGKILLed: at least 90 % of new connections still succeed, and the
// routes leave it within 10 s.
func scenarioDoormanRolloutMidTraffic(ctx context.Context, ns string) {
	const streams = 100
	streamer := optedIn("stream", ns, 1, longIdle)
	streamer.StartupDelay = time.Second
	apps := []framework.SampleApp{streamer}
	var askURLs []string
	for i := range 3 {
		a := asking(fmt.Sprintf("ask%d", i), ns)
		apps = append(apps, a)
		askURLs = append(askURLs, serviceURL(a.Name, ns, "/"))
	}
	deployPaused(ctx, apps)

	// 100 streams of 30 s, held while the workload wakes, then passing
	// through the doorman pods that held them.
	starts := &streamStarts{}
	streamed := make(chan error, streams)
	for range streams {
		go func() { streamed <- streamThrough(ctx, serviceURL(streamer.Name, ns, "/stream?for=30s"), starts) }()
	}
	starts.await(streams, 2*time.Minute, "every stream passes through")

	t := startTraffic(ctx, askURLs, newConnEvery, 10*time.Second, http.StatusServiceUnavailable)
	deploy := doormanDeployment(ctx)
	old, err := fw.Clientset.CoreV1().Pods(napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=doorman"})
	Expect(err).NotTo(HaveOccurred())
	finals := watchFinalStates(ctx, old.Items)
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"napwake.dev/e2e-restarted-at":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	_, err = fw.Clientset.AppsV1().Deployments(napwakeNS).Patch(ctx, deploy.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		for _, p := range old.Items {
			_, err := fw.Clientset.CoreV1().Pods(napwakeNS).Get(ctx, p.Name, metav1.GetOptions{})
			g.Expect(err).To(HaveOccurred(), p.Name+" is gone")
		}
		d, err := fw.Clientset.AppsV1().Deployments(napwakeNS).Get(ctx, deploy.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.UpdatedReplicas).To(Equal(*d.Spec.Replicas))
		g.Expect(d.Status.AvailableReplicas).To(Equal(*d.Spec.Replicas))
	}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
	ok, failed, why := t.stop()
	GinkgoWriter.Printf("through the rollout: %d new connections answered, %d failed (%s)\n", ok, failed, why)
	Expect(failed).To(BeZero(), "no connection refused through the rollout: "+why)
	for range streams {
		Expect(<-streamed).NotTo(HaveOccurred(), "every stream finishing within 40 s of its pod's SIGTERM completes")
	}
	for _, p := range old.Items {
		last := finals(p.UID)
		Expect(last).NotTo(BeNil(), p.Name+"'s deletion and last state were seen")
		c := last.pod.Status.ContainerStatuses[0].State.Terminated
		Expect(c).NotTo(BeNil(), p.Name+" ended")
		GinkgoWriter.Printf("%s: exit %d (%s) at %s, its grace period ending at %s\n", p.Name, c.ExitCode, c.Reason,
			c.FinishedAt.Format(time.TimeOnly), last.graceEnd.Format(time.TimeOnly))
		Expect(c.ExitCode).To(BeZero(), p.Name+" exits 0 (%s)", c.Reason)
		Expect(c.FinishedAt.Time).To(BeTemporally("<", last.graceEnd), p.Name+" exits before its grace period ends")
	}
	AddReportEntry("doorman rollout", fmt.Sprintf("%d new connections (one every %s), %d streams, 0 refused", ok, newConnEvery, streams))
	sigkillOneDoorman(ctx, ns, askURLs)
}

// sigkillOneDoorman SIGKILLs one Ready doorman pod's process mid-traffic:
// at least 90 % of the new connections still succeed, and the routed
// Services' slices no longer list it within 10 s (for however short a time:
// the pod restarts in place and its routes come back once it is Ready).
func sigkillOneDoorman(ctx context.Context, ns string, askURLs []string) {
	pods, err := fw.Clientset.CoreV1().Pods(napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=doorman"})
	Expect(err).NotTo(HaveOccurred())
	var victim *corev1.Pod
	for i := range pods.Items {
		if framework.PodReady(&pods.Items[i]) && pods.Items[i].DeletionTimestamp == nil {
			victim = &pods.Items[i]
		}
	}
	Expect(victim).NotTo(BeNil(), "a Ready doorman pod")
	services := []string{"ask0", "ask1", "ask2"}
	listed := func() (n int) {
		for _, s := range services {
			addrs, err := fw.DoormanSliceAddresses(ctx, ns, s)
			if err == nil && contains(addrs, victim.Status.PodIP) {
				n++
			}
		}
		return n
	}
	Eventually(listed).WithTimeout(time.Minute).Should(Equal(len(services)), "every routed slice lists the victim first")
	t := startTraffic(ctx, askURLs, newConnEvery, 10*time.Second, http.StatusServiceUnavailable)
	// The container's ID is read now, not from the list a minute ago: a
	// restart since then would give it a new one, and a restart of a
	// doorman nobody killed is a fault this spec must name.
	now, err := fw.Clientset.CoreV1().Pods(napwakeNS).Get(ctx, victim.Name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(now.Status.ContainerStatuses).To(HaveLen(1), "the doorman pod runs one container")
	c := now.Status.ContainerStatuses[0]
	Expect(c.RestartCount).To(BeZero(), "%s's doorman has not restarted (last state %+v)", victim.Name, c.LastTerminationState)
	// Watched, not polled: the pod restarts in place and is Ready again
	// within a second or two, and its routes come back with it.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	leave, err := fw.WatchSlicesLeave(wctx, ns, victim.Status.PodIP, services)
	Expect(err).NotTo(HaveOccurred())
	killed := killContainer(c.ContainerID)
	at := time.Now()
	Expect(killed).NotTo(BeZero(), "the doorman's process was found and SIGKILLed: %s", processesOf(now))
	var left time.Time
	Eventually(leave).WithTimeout(10*time.Second).Should(Receive(&left), "the routes leave a SIGKILLed doorman pod within 10 s")
	moved := left.Sub(at)
	<-time.After(time.Until(at.Add(15 * time.Second))) // new connections for 15 s from the kill: the measured window
	ok, failed, why := t.stop()
	GinkgoWriter.Printf("SIGKILL of %s: routes moved in %s; %d new connections answered, %d failed (%s)\n",
		victim.Name, moved.Round(time.Millisecond), ok, failed, why)
	Expect(ok*100).To(BeNumerically(">=", 90*(ok+failed)), "at least 90 %% of new connections succeed: "+why)
	AddReportEntry("doorman SIGKILL", fmt.Sprintf("routes moved in %s, %d of %d new connections answered", moved.Round(time.Millisecond), ok, ok+failed))
}

// howItStops is how the app of scenarioPausesUnderTraffic stops: it goes on
// serving shutdownDelay after SIGTERM, or its pod sleeps preStop before
// SIGTERM ("a few seconds": kube-proxy takes up to 2 s and more here to
// drop a stopping pod).
type howItStops struct{ shutdownDelay, preStop time.Duration }

func (h howItStops) String() string {
	if h.preStop > 0 {
		return "a " + h.preStop.String() + " preStop"
	}
	return "serving " + h.shutdownDelay.String() + " after SIGTERM"
}

// scenarioPausesUnderTraffic: a client loops through the Service, one new
// connection after another, while the workload (an app that goes on
// serving a few seconds once deleted, as stop says) is paused 20 times:
// each pause's pods stop and a wake (or the pause called off by the
// client's requests) brings new ones. The client sees no refusal, no
// reset, only the app's answers, each within 15 s, and the workload is
// Running again within 10 s of the doorman's slice appearing.
func scenarioPausesUnderTraffic(ctx context.Context, ns string, stop howItStops) {
	app := optedIn("loop", ns, 1, longIdle)
	app.StartupDelay = 500 * time.Millisecond
	app.ShutdownDelay, app.PreStop = stop.shutdownDelay, stop.preStop
	deployRunning(ctx, app)
	url := serviceURL(app.Name, ns, "/")
	// kube-proxy may need a moment after the endpoints appear: the client
	// starts once the Service answers.
	Eventually(func() (int, error) {
		r, err := framework.HTTPGet(ctx, url, nil, 3*time.Second)
		return r.Status, err
	}).WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))
	// Each request waits at most 15 s for the app's answer: a wake that
	// loses the request for longer (the doorman's stamp read as before the
	// pause, and not made again) fails it, not only a refusal or a reset.
	t := startTraffic(ctx, []string{url}, 0, 15*time.Second, http.StatusOK)
	go logRouting(ctx, ns, app.Name)
	paused, calledOff := 0, 0
	var slowest time.Duration // from the doorman's slice appearing to Running, over the rounds
	for i := 1; i <= 20; i++ {
		before, err := fw.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app.Name})
		Expect(err).NotTo(HaveOccurred())
		mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
		Expect(err).NotTo(HaveOccurred())
		if mw.Status.ResumedAt != nil { // a pause request is read in whole seconds: one after the last wake's
			Eventually(func() bool { return time.Now().Truncate(time.Second).After(mw.Status.ResumedAt.Time) }).Should(BeTrue())
		}
		// The last round's slices go once it is Running: this round's bound
		// counts from its own slice.
		Eventually(func() ([]string, error) { return fw.DoormanSliceAddresses(ctx, ns, app.Name) }).
			WithTimeout(30*time.Second).Should(BeEmpty(), "pause %d: the last wake's doorman slice is gone", i)
		Expect(fw.RequestPause(ctx, ns, app.Name)).To(Succeed())
		resumed := mw.Status.ResumedAt
		sawPaused := false
		var sliceAt time.Time // when this round's doorman slice was first seen
		Eventually(func(g Gomega) {
			if sliceAt.IsZero() {
				if addrs, err := fw.DoormanSliceAddresses(ctx, ns, app.Name); err == nil && len(addrs) > 0 {
					sliceAt = time.Now()
				}
			}
			p := fw.Phase(ctx, ns, app.Name)
			sawPaused = sawPaused || p == napwakev1alpha1.PhasePaused
			g.Expect(p).To(Equal(napwakev1alpha1.PhaseRunning))
			pods, err := fw.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app.Name})
			g.Expect(err).NotTo(HaveOccurred())
			if !stopping(pods.Items, before.Items) {
				// Called off before it scaled anything down: the doorman's
				// report of the client's connections passing through (a
				// tick every 30 s) landed in the pause's first second, which
				// counts as activity in the pause. Not what this spec
				// judges: ask again, one second after that wake.
				now, err := fw.ManagedWorkload(ctx, ns, app.Name)
				g.Expect(err).NotTo(HaveOccurred())
				if r := now.Status.ResumedAt; r != nil && (resumed == nil || r.After(resumed.Time)) && time.Now().Truncate(time.Second).After(r.Time) {
					resumed = r
					calledOff++
					GinkgoWriter.Printf("pause %d called off before its pods stopped (%v); asked again\n", i, now.Status.LastActivitySource)
					g.Expect(fw.RequestPause(ctx, ns, app.Name)).To(Succeed())
					sliceAt = time.Time{} // the bound counts from the slice of the pause asked again
				}
			}
			g.Expect(stopping(pods.Items, before.Items)).To(BeTrue(), "the pause stops the pods it found")
			g.Expect(fw.ReadyReplicas(ctx, ns, app.Name)).To(Equal(int32(1)))
		}).WithTimeout(90*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), "pause %d stops the pods, and a wake brings one back", i)
		if !sliceAt.IsZero() {
			// The spec's bound for a caller met by the pause: the workload is
			// Running again within 10 s of the doorman's slice appearing.
			took := time.Since(sliceAt)
			slowest = max(slowest, took)
			Expect(took).To(BeNumerically("<=", 10*time.Second), "pause %d: Running again %s after the doorman's slice appeared", i, took.Round(time.Millisecond))
		}
		if sawPaused {
			paused++
		}
		okN, failed, why := t.counts()
		GinkgoWriter.Printf("pause %d done: %d answered, %d failed so far\n", i, okN, failed)
		Expect(failed).To(BeZero(), "no refusal or reset by pause %d: %s", i, why)
	}
	ok, failed, why := t.stop()
	Expect(failed).To(BeZero(), why)
	AddReportEntry("20 pauses under traffic, "+stop.String(), fmt.Sprintf("%d answers, 0 failed; %d of 20 pauses reached Paused, the rest were called off by the client; %d asked again, called off before their pods stopped; Running again at most %s after the doorman's slice appeared",
		ok, paused, calledOff, slowest.Round(time.Millisecond)))
}

// logRouting logs, until the spec ends, each change of what callers of
// the Service may reach: the phase, the doorman's slice endpoints, the
// Service's own Ready endpoints. On a failure it says when each moved.
func logRouting(ctx context.Context, ns, name string) {
	ctx, cancel := context.WithCancel(ctx)
	DeferCleanup(cancel)
	last := ""
	for ctx.Err() == nil {
		doorman, _ := fw.DoormanSliceAddresses(ctx, ns, name)
		own, _ := fw.Clientset.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
			LabelSelector: "kubernetes.io/service-name=" + name + ",endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io"})
		var ready []string
		if own != nil {
			for _, sl := range own.Items {
				for _, e := range sl.Endpoints {
					if e.Conditions.Ready != nil && *e.Conditions.Ready {
						ready = append(ready, e.Addresses...)
					}
				}
			}
		}
		listens := map[string]bool{}
		stamps := ""
		mw, err := fw.ManagedWorkload(ctx, ns, name)
		if err == nil {
			// What the operator judges a wake by: the doorman's stamps
			// against the pause's start.
			stamps = fmt.Sprintf(", last-request %s, last-activity %s", mw.Annotations[napwakev1alpha1.AnnotationLastRequest], mw.Annotations[napwakev1alpha1.AnnotationLastActivity])
			if p := mw.Status.Pause; p != nil {
				stamps += ", pause started " + p.StartedAt.UTC().Format(time.RFC3339)
			}
		}
		if err == nil && mw.Status.Doorman != nil && len(mw.Status.Doorman.Routes) > 0 {
			port := strconv.Itoa(int(mw.Status.Doorman.Routes[0].DoormanPort))
			for _, ip := range doorman {
				c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, port), 100*time.Millisecond)
				if err == nil {
					_ = c.Close()
				}
				listens[ip+":"+port] = err == nil
			}
		}
		state := fmt.Sprintf("phase %s, doorman slice %v (listening %v), own Ready %v%s", fw.Phase(ctx, ns, name), doorman, listens, ready, stamps)
		if state != last {
			GinkgoWriter.Printf("%s %s\n", time.Now().Format("15:04:05.000"), state)
			last = state
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// streamThrough GETs a /stream URL, counts itself started once the
// response's headers arrive, and reads to the end: nil when the stream
// completed with its "done" line.
func streamThrough(ctx context.Context, url string, starts *streamStarts) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "e2e-stream/1")
	resp, err := (&http.Client{Timeout: 3 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		err = fmt.Errorf("starting the stream: %w", err)
		starts.fail(err)
		return err
	}
	defer resp.Body.Close()
	starts.started.Add(1)
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the stream after %d bytes: %w", len(body), err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(string(body), "done\n") {
		return fmt.Errorf("the stream ended without its last line: %s, %d bytes", resp.Status, len(body))
	}
	return nil
}

// streamStarts counts the streams whose answer began, and keeps why any
// could not begin: a spec waiting for them all stops at the first that
// failed, naming its error (a refusal, a name not found, a timeout), rather
// than waiting out its bound and saying only how many began.
type streamStarts struct {
	started atomic.Int32
	mu      sync.Mutex
	failed  []string
}

func (s *streamStarts) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = append(s.failed, time.Now().Format("15:04:05.000")+" "+err.Error())
}

// await waits up to timeout until n streams have begun, failing at once
// when one could not begin.
func (s *streamStarts) await(n int32, timeout time.Duration, what string) {
	Eventually(func() (int32, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.failed) > 0 {
			return 0, StopTrying(fmt.Sprintf("%d streams could not begin (%d began); the first: %s",
				len(s.failed), s.started.Load(), strings.Join(s.failed[:min(3, len(s.failed))], "; ")))
		}
		return s.started.Load(), nil
	}).WithTimeout(timeout).Should(Equal(n), what)
}

// doormanDeployment is the chart's doorman Deployment.
func doormanDeployment(ctx context.Context) appsv1.Deployment {
	ds, err := fw.Clientset.AppsV1().Deployments(napwakeNS).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, d := range ds.Items {
		if d.Spec.Selector != nil && d.Spec.Selector.MatchLabels["control-plane"] == "doorman" {
			return d
		}
	}
	Fail("no doorman Deployment in " + napwakeNS)
	return appsv1.Deployment{}
}

// final is a pod's last state seen, and when its grace period was to end
// as first set (the kubelet moves deletionTimestamp to the moment it
// deletes the pod once its containers have ended).
type final struct {
	pod      *corev1.Pod
	graceEnd time.Time
}

// watchFinalStates watches pods until the spec ends and returns the last
// state seen of each once deleted (its container's termination), or nil.
func watchFinalStates(ctx context.Context, pods []corev1.Pod) func(types.UID) *final {
	ctx, cancel := context.WithCancel(ctx)
	DeferCleanup(cancel)
	var mu sync.Mutex
	last := map[types.UID]*final{}
	for i := range pods {
		last[pods[i].UID] = &final{pod: pods[i].DeepCopy()}
	}
	go func() {
		for ctx.Err() == nil {
			w, err := fw.Clientset.CoreV1().Pods(napwakeNS).Watch(ctx, metav1.ListOptions{LabelSelector: "control-plane=doorman"})
			if err != nil {
				continue
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type == watch.Error {
					continue
				}
				mu.Lock()
				if f := last[p.UID]; f != nil {
					f.pod = p
					if f.graceEnd.IsZero() && p.DeletionTimestamp != nil {
						f.graceEnd = p.DeletionTimestamp.Time
					}
				}
				mu.Unlock()
			}
		}
	}()
	return func(uid types.UID) *final {
		mu.Lock()
		defer mu.Unlock()
		f := last[uid]
		if f == nil || f.graceEnd.IsZero() || len(f.pod.Status.ContainerStatuses) == 0 {
			return nil
		}
		return f
	}
}

// killContainer SIGKILLs every process of a container (containerd://ID),
// found by the ID in its cgroup, and returns how many it killed. The suite
// runs in the node's network namespace, not a PID namespace of its own.
func killContainer(containerID string) int {
	id := containerID[strings.Index(containerID, "://")+3:]
	procs, err := filepath.Glob("/proc/[0-9]*/cgroup")
	Expect(err).NotTo(HaveOccurred())
	killed := 0
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), id) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil || errors.Is(err, syscall.ESRCH) {
			killed++
		}
	}
	return killed
}

// processesOf says, for a failure's message, the container status of p
// and each process whose cgroup names p's UID.
func processesOf(p *corev1.Pod) string {
	var b strings.Builder
	for _, c := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "container %s id %s ready %t restarts %d state %+v; ", c.Name, c.ContainerID, c.Ready, c.RestartCount, c.State)
	}
	uid := strings.ReplaceAll(string(p.UID), "-", "_")
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, f := range procs {
		cg, err := os.ReadFile(f)
		if err != nil || !strings.Contains(strings.ReplaceAll(string(cg), "-", "_"), uid) {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "comm"))
		fmt.Fprintf(&b, "pid %s %s in %s; ", filepath.Base(filepath.Dir(f)), strings.TrimSpace(string(comm)), strings.TrimSpace(string(cg)))
	}
	return b.String()
}

// stopping reports whether every pod of before is gone from pods or
// being deleted.
func stopping(pods, before []corev1.Pod) bool {
	for _, b := range before {
		for _, p := range pods {
			if p.UID == b.UID && p.DeletionTimestamp == nil {
				return false
			}
		}
	}
	return true
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
