//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

// scenarioScheduleWakes: a labelled workload, paused on request, is given
// napwake.dev/awake-hours with a window that starts at the next whole
// minute at least 30 s away (UTC). The operator wakes it at that start,
// not before: lastActivitySource schedule, and a Waking event naming the
// window.
func scenarioScheduleWakes(ctx context.Context, ns string) {
	app := optedIn("sched", ns, 1, "30m")
	deployRunning(ctx, app)
	pauseNow(ctx, ns, app.Name)

	start := time.Now().UTC().Add(30 * time.Second).Truncate(time.Minute).Add(time.Minute)
	end := "24:00"
	if e := start.Add(10 * time.Minute); e.YearDay() == start.YearDay() {
		end = e.Format("15:04")
	}
	window := fmt.Sprintf("%s %s-%s", start.Weekday().String()[:3], start.Format("15:04"), end)
	By("awake-hours " + window + " on the Deployment")
	Expect(fw.AnnotateDeployment(ctx, ns, app.Name, map[string]string{napwakev1alpha1.AnnotationAwakeHours: window})).To(Succeed())
	Eventually(func(g Gomega) {
		mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(mw.Spec.Schedule).NotTo(BeNil())
		g.Expect(mw.Status.Schedule).NotTo(BeNil())
		g.Expect(mw.Status.Schedule.NextStart).NotTo(BeNil())
		g.Expect(mw.Status.Schedule.NextStart.Time.Equal(start)).To(BeTrue(), "status.schedule.nextStart %v, want %v", mw.Status.Schedule.NextStart, start)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	Expect(fw.Phase(ctx, ns, app.Name)).To(Equal(napwakev1alpha1.PhasePaused), "nothing wakes it before the window")

	By("it wakes at the window's start")
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).
		WithTimeout(time.Until(start) + 30*time.Second).WithPolling(time.Second).Should(Equal(napwakev1alpha1.PhaseRunning))
	Expect(time.Now()).To(BeTemporally(">=", start), "woken before the window began")
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.LastActivitySource).To(Equal(napwakev1alpha1.SourceSchedule))
	Expect(mw.Status.ResumedAt.Time).To(BeTemporally(">=", start))
	Expect(mw.Status.Schedule.Awake).To(BeTrue())

	evs, err := fw.Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=ManagedWorkload,involvedObject.name=" + app.Name + ",reason=" + napwakev1alpha1.EventWaking,
	})
	Expect(err).NotTo(HaveOccurred())
	var said []string
	for _, e := range evs.Items {
		said = append(said, e.Message)
	}
	Expect(strings.Join(said, "\n")).To(ContainSubstring("woken by schedule window " + window))
}

// scenarioPauseUntil: napwake.dev/pause-until pauses a running workload;
// while it holds, a browser gets the asleep page saying until when, with no
// button, and an API client the doorman's 503 saying until when, both at
// once, and nothing wakes it; wake-requested does.
func scenarioPauseUntil(ctx context.Context, ns string) {
	app := optedIn("held", ns, 1, longIdle)
	deployRunning(ctx, app)
	untilTime := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	until := untilTime.Format(time.RFC3339)
	Expect(fw.Annotate(ctx, ns, app.Name, map[string]string{napwakev1alpha1.AnnotationPauseUntil: until})).To(Succeed())
	expectPausedAndRouted(ctx, ns, app.Name, 90*time.Second)

	for _, c := range []struct {
		ua     string
		status int
		says   string
	}{
		{chromeLikeUA, 200, "It stays asleep until <b>" + untilTime.Format("Mon 2 Jan 2006, 15:04") + " UTC</b>"},
		{"e2e-client/1", 503, "This environment is paused until " + until},
	} {
		By("a caller with User-Agent " + c.ua + " is told at once until when it is paused")
		resp, err := framework.HTTPGet(ctx, serviceURL(app.Name, ns, "/"),
			map[string]string{"User-Agent": c.ua, "Accept": "text/html,application/xhtml+xml", "Sec-Fetch-Mode": "navigate"}, 10*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(Equal(c.status))
		Expect(resp.Body).To(ContainSubstring(c.says))
		Expect(resp.Body).NotTo(ContainSubstring("<button"), "no Wake it button: nothing a caller sends can wake it")
		if c.status == 503 {
			Expect(resp.Header.Get("Retry-After")).NotTo(BeEmpty())
		}
		Expect(resp.Elapsed).To(BeNumerically("<", 5*time.Second), "answered at once, not held")
	}
	Consistently(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).
		WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Equal(napwakev1alpha1.PhasePaused))

	By("wake-requested wakes it all the same")
	Expect(fw.Annotate(ctx, ns, app.Name, map[string]string{napwakev1alpha1.AnnotationWakeRequested: time.Now().UTC().Format(time.RFC3339)})).To(Succeed())
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).
		WithTimeout(time.Minute).Should(Equal(napwakev1alpha1.PhaseRunning))
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.LastActivitySource).To(Equal(napwakev1alpha1.SourceWakeRequested))
}

var _ = Describe("Napwake's schedules", func() {
	BeforeEach(requireNapwake)
	It("wakes a paused workload at the start of an awake-hours window a minute from now", func() {
		inNamespace("schedule", nil, scenarioScheduleWakes)
	})
	It("keeps a workload paused under pause-until, telling callers until when, until wake-requested wakes it", func() {
		inNamespace("pauseuntil", nil, scenarioPauseUntil)
	})
})
