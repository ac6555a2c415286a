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
	It("holds a workload awake past idleAfter where a person came back after it before, then pauses it", func() {
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
		g.Expect(w.LastPerson).To(BeTemporally("~", at, 5*time.Second), "the request is the latest person")
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
// idleAfter of 1m is woken by a person's request, pauses a minute later,
// and is woken again by the next request two minutes after the first: one
// gap of two minutes learned. After the second wake the forecast holds it
// awake at its idleAfter (the ForecastHold event, status.forecast.last a
// Hold, still Running well past idleAfter), and it pauses only once the
// hold ends with nobody back (docs/forecast.md#how-it-decides).
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
	// No gap learned yet: it pauses at idleAfter.
	expectPausedAndRouted(ctx, ns, app.Name, forecastIdleAfter+time.Minute)
	<-time.After(time.Until(first.Add(2 * time.Minute))) // the person comes back two minutes after the first request
	second := wake()

	// One gap of two minutes on this weekday at this hour: at idleAfter the
	// forecast holds it awake until about three minutes after the request.
	held := func() ([]string, error) {
		return fw.EventReasons(ctx, ns, "ManagedWorkload", app.Name)
	}
	Eventually(held).WithTimeout(forecastIdleAfter+45*time.Second).WithPolling(time.Second).
		Should(ContainElement(napwakev1alpha1.EventForecastHold), "the forecast holds it at idleAfter")
	got, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(got.Status.Forecast).NotTo(BeNil())
	Expect(got.Status.Forecast.Last).NotTo(BeNil(), "status.forecast.last names the hold")
	Expect(got.Status.Forecast.Last.Action).To(Equal(napwakev1alpha1.ForecastActionHold))
	Expect(got.Status.Forecast.Last.Observed).To(BeFalse(), "acted on, not only observed")
	msgs, err := fw.EventMessages(ctx, ns, "ManagedWorkload", app.Name, napwakev1alpha1.EventForecastHold)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("ForecastHold: %q\n", msgs)
	Expect(msgs).To(ContainElement(ContainSubstring("someone came back within")), "the event gives the hold's figures")

	// Still Running half a minute past idleAfter, where idleness alone
	// would have paused it.
	Consistently(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).
		WithTimeout(time.Until(second.Add(forecastIdleAfter+30*time.Second))).WithPolling(time.Second).
		Should(Equal(napwakev1alpha1.PhaseRunning), "held awake past idleAfter")

	// Nobody comes back: the hold ends and it pauses, later than idleAfter.
	expectPausedAndRouted(ctx, ns, app.Name, 4*time.Minute)
	got, err = fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(got.Status.Pause).NotTo(BeNil())
	pausedAfter := got.Status.Pause.StartedAt.Sub(second)
	GinkgoWriter.Printf("the second wake's request at %s, paused at %s: %s after it\n",
		second.Format(time.TimeOnly), got.Status.Pause.StartedAt.Format(time.TimeOnly), pausedAfter.Round(time.Second))
	Expect(pausedAfter).To(BeNumerically(">=", forecastIdleAfter+30*time.Second), "the pause came past idleAfter")
}
