//go:build e2e

package cluster

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

var _ = Describe("The forecast", func() {
	BeforeEach(requireNapwake)
	It("learns a person's wake on a labelled workload with no forecast settings, within a minute", func() {
		inNamespace("learns", nil, scenarioForecastLearnsEveryWorkload)
	})
	// The longest specs of the parallel phase start first (SpecPriority),
	// so none begins last and holds the Serial phase back: this one waits
	// out a learned hold, about 6.5 minutes (docs/development.md).
	It("holds a workload awake past idleAfter where a person came back after it before, then pauses it", SpecPriority(3), func() {
		inNamespace("forecast", nil, scenarioForecastHold)
	})
})

// scenarioForecastLearnsEveryWorkload: a workload opted in by label, with
// no spec.forecast, is woken by a person's request; within a minute its
// status.forecast holds the request as its latest person, and kubectl
// napwake forecast says so, while nothing acts on it (no pre-wake planned,
// no forecast event) (docs/forecast.md).
func scenarioForecastLearnsEveryWorkload(ctx context.Context, ns string) {
	app := optedIn("learner", ns, 1, longIdle)
	deployRunning(ctx, app)
	pauseNow(ctx, ns, app.Name)

	at := time.Now()
	resp, err := framework.HTTPGet(ctx, serviceURL(app.Name, ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(http.StatusOK), "the held request got the app's answer")

	var st *napwakev1alpha1.ForecastStatus
	Eventually(func(g Gomega) {
		mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(mw.Spec.Forecast).To(BeNil(), "the workload has no forecast settings")
		st = mw.Status.Forecast
		g.Expect(st).NotTo(BeNil(), "status.forecast is written")
		w, err := napwakev1alpha1.ReadForecastState(st.State)
		g.Expect(err).NotTo(HaveOccurred())
		// The request, or the app's CPU once woken by it (activity while
		// awake counts as a person too): nothing before the request.
		g.Expect(w.LastPerson).To(BeTemporally(">=", at.Add(-time.Second)), "the request's wake is learned")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the wake is learned within a minute")
	Expect(st.NextPreWake).To(BeNil(), "nothing is planned where autoResume is off")
	Expect(st.Last).To(BeNil(), "the forecast took no action")
	reasons, err := fw.EventReasons(ctx, ns, "ManagedWorkload", app.Name)
	Expect(err).NotTo(HaveOccurred())
	for _, r := range []string{napwakev1alpha1.EventForecastHold, napwakev1alpha1.EventForecastObserved} {
		Expect(reasons).NotTo(ContainElement(r), "no forecast event where the forecast is not set")
	}
	out := kubectlNapwake(ctx, ns)("forecast", app.Name)
	Expect(out).To(ContainSubstring("Last person "), "the plugin shows what was learned")
	Expect(out).To(ContainSubstring("auto-resume off"))
}

// forecastIdleAfter is the shortest idleAfter the API takes: the spec's
// gaps are minutes, as the forecast counts them.
const forecastIdleAfter = time.Minute

// scenarioForecastHold: a workload with spec.forecast.autoResume and an
// idleAfter of 1m is woken by a person's request, pauses, and is woken
// again by the next request at least 2m30s after the first: a gap of that
// length learned. After the second wake the forecast holds it awake at
// idleAfter (status.forecast.last a Hold, the ForecastHold event with its
// figures, still Running 30 s past the moment idleness alone would have
// paused it), and it pauses only once the hold ends with nobody back, 30 s
// or more past that moment (docs/forecast.md#how-it-decides). The app's
// CPU while awake counts as a person too, so every bound is taken from
// status.lastActivity, not from the request.
func scenarioForecastHold(ctx context.Context, ns string) {
	app := framework.SampleApp{Name: "held", Namespace: ns, Replicas: 1, StartupDelay: time.Second}
	Expect(fw.Deploy(ctx, app)).To(Succeed())
	mw := &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: ns},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: app.Name},
			IdleAfter: &metav1.Duration{Duration: forecastIdleAfter},
			Forecast:  &napwakev1alpha1.ForecastSpec{AutoResume: true},
		},
	}
	Expect(fw.Client.Create(ctx, mw)).To(Succeed())
	expectPausedAndRouted(ctx, ns, app.Name, 3*time.Minute)

	wake := func() time.Time {
		at := time.Now()
		resp, err := framework.HTTPGet(ctx, serviceURL(app.Name, ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 2*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(Equal(http.StatusOK), "the held request got the app's answer")
		Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
		return at
	}
	first := wake()
	// It pauses at idleAfter, or later where its CPU while starting already
	// counted as a person a minute or two before (activity while awake
	// teaches the forecast too). The person comes back at least 2m30s
	// after the first request and after the pause: a gap of that length
	// learned at this hour.
	expectPausedAndRouted(ctx, ns, app.Name, 6*time.Minute)
	<-time.After(time.Until(first.Add(150 * time.Second)))
	second := wake()

	// At idleAfter after the second wake the forecast holds it awake until
	// about that gap's length after its latest person.
	var got *napwakev1alpha1.ManagedWorkload
	Eventually(func(g Gomega) {
		var err error
		got, err = fw.ManagedWorkload(ctx, ns, app.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Forecast).NotTo(BeNil())
		l := got.Status.Forecast.Last
		g.Expect(l).NotTo(BeNil(), "status.forecast.last names the hold")
		g.Expect(l.Action).To(Equal(napwakev1alpha1.ForecastActionHold))
		g.Expect(l.At.Time).To(BeTemporally(">=", second.Add(-time.Second)), "a hold after the second wake")
	}).WithTimeout(4*time.Minute).WithPolling(time.Second).Should(Succeed(), "the forecast holds it at idleAfter (after the app's CPU, too, went quiet)")
	Expect(got.Status.Forecast.Last.Observed).To(BeFalse(), "acted on, not only observed")
	msgs, err := fw.EventMessages(ctx, ns, "ManagedWorkload", app.Name, napwakev1alpha1.EventForecastHold)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("ForecastHold: %q\n", msgs)
	Expect(msgs).To(ContainElement(ContainSubstring("someone came back within")), "the event gives the hold's figures")

	// Still Running half a minute past the moment idleness alone would
	// have paused it (its latest activity, the request or the app's CPU,
	// plus idleAfter).
	idleAt := got.Status.LastActivity.Add(forecastIdleAfter)
	Consistently(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).
		WithTimeout(time.Until(idleAt.Add(30*time.Second))).WithPolling(time.Second).
		Should(Equal(napwakev1alpha1.PhaseRunning), "held awake past idleAfter")

	// Nobody comes back: the hold ends and it pauses, later than idleAfter.
	expectPausedAndRouted(ctx, ns, app.Name, 4*time.Minute)
	got, err = fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(got.Status.Pause).NotTo(BeNil())
	idleAt = got.Status.LastActivity.Add(forecastIdleAfter)
	pastIdle := got.Status.Pause.StartedAt.Sub(idleAt)
	GinkgoWriter.Printf("the second wake's request at %s, idle from %s, paused at %s: %s past idleAfter\n",
		second.Format(time.TimeOnly), idleAt.Format(time.TimeOnly), got.Status.Pause.StartedAt.Format(time.TimeOnly), pastIdle.Round(time.Second))
	Expect(pastIdle).To(BeNumerically(">=", 30*time.Second), "the pause came past idleAfter")
}
