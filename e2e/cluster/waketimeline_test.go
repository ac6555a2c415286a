//go:build e2e

package cluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

var _ = Describe("A wake's timeline", func() {
	BeforeEach(requireNapwake)
	It("records where a request's wake went, steps in order and within the total, and kubectl napwake describe shows it", func() {
		inNamespace("timeline", nil, scenarioWakeTimeline)
	})
})

// scenarioWakeTimeline: a request wakes a paused sample app; status.lastWake
// then names the request, its steps come in the documented order, each
// within the wake's total and together no more than it, the slowest is
// flagged with advice, and describe and status show them
// (docs/pause.md#where-a-wakes-time-went).
func scenarioWakeTimeline(ctx context.Context, ns string) {
	run := kubectlNapwake(ctx, ns)
	app := optedIn("timed", ns, 1, longIdle)
	deployRunning(ctx, app)
	pauseNow(ctx, ns, app.Name)
	pausedAt := time.Now()

	logs := clientGet(ctx, ns, "client", serviceURL(app.Name, ns, "/"))
	Expect(logs).To(ContainSubstring("200 OK"), "the held request got the app's answer")
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))

	var w *napwakev1alpha1.LastWakeStatus
	Eventually(func(g Gomega) {
		mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
		g.Expect(err).NotTo(HaveOccurred())
		w = mw.Status.LastWake
		g.Expect(w).NotTo(BeNil())
		g.Expect(w.TotalMilliseconds).To(BeNumerically(">", 0), "the wake is complete once Running")
	}).Should(Succeed())
	Expect(w.Source).To(Equal(napwakev1alpha1.SourceRequest))
	Expect(w.StartedAt.Time).To(BeTemporally(">=", pausedAt.Add(-time.Second).Truncate(time.Second)), "the timeline is this wake's")

	order := []napwakev1alpha1.WakeStepName{napwakev1alpha1.WakeStepWoken, napwakev1alpha1.WakeStepScaled, napwakev1alpha1.WakeStepScheduled,
		napwakev1alpha1.WakeStepStarted, napwakev1alpha1.WakeStepReady, napwakev1alpha1.WakeStepRunning}
	var names []napwakev1alpha1.WakeStepName
	var sum int64
	for _, s := range w.Steps {
		names = append(names, s.Name)
		Expect(s.Milliseconds).To(BeNumerically(">=", 0), "step %s", s.Name)
		Expect(s.Milliseconds).To(BeNumerically("<=", w.TotalMilliseconds), "step %s is within the wake's total", s.Name)
		sum += s.Milliseconds
	}
	Expect(names).To(Equal(order), "every step told, in order (note: %q)", w.Note)
	Expect(sum).To(BeNumerically("<=", w.TotalMilliseconds), "the steps add up to no more than the total")
	Expect(w.Slowest).To(BeElementOf(order))
	Expect(w.Advice).NotTo(BeEmpty())
	Expect(w.Pod).NotTo(BeEmpty(), "the wake's first Ready pod is named")

	out := run("describe", app.Name)
	Expect(out).To(ContainSubstring("Last wake: woken by request"))
	for _, s := range order {
		Expect(out).To(MatchRegexp(`(?m)^  %s( \(slowest\))? +\d+\.\d s`, s), "describe shows the %s step", s)
	}
	Expect(out).To(ContainSubstring("Slowest:"))
	Expect(out).To(ContainSubstring("Image: "), "the kubelet's Pulled event of the wake's pod")
	Expect(run("status")).To(ContainSubstring("LAST WAKE"))
}
