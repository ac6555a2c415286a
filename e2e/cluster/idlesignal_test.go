//go:build e2e

package cluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

var _ = Describe("Napwake's default idle signal", func() {
	BeforeEach(requireNapwake)
	// Started early among the parallel specs (SpecPriority): about 4 minutes.
	It("keeps a workload in steady use through its Service Running past its idleAfter, and pauses it once left alone", SpecPriority(2), func() {
		inNamespace("cpu", nil, scenarioUsageKeepsItUp)
	})
})

// scenarioUsageKeepsItUp: no request reaches the doorman (the workload is
// Running, so its Service leads to its pods), no annotation is set: only
// the CPU the metrics API reports says someone uses it. Steady use keeps it
// up well past its 1-minute idleAfter; left alone it pauses.
func scenarioUsageKeepsItUp(ctx context.Context, ns string) {
	app := optedIn("cpu", ns, 1, "1m")
	deployRunning(ctx, app)
	load := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "load", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "load", Image: framework.SampleAppImage, ImagePullPolicy: corev1.PullNever,
				Args:            []string{"load", "--every", "2ms", "--for", "10m", serviceURL(app.Name, ns, "/")},
				SecurityContext: framework.SampleApp{}.PodSpec(nil, nil).Containers[0].SecurityContext,
			}},
		},
	}
	Expect(fw.Client.Create(ctx, load)).To(Succeed())

	By("the use is seen as activity: lastActivitySource usage")
	Eventually(func() (string, error) {
		mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
		if err != nil {
			return "", err
		}
		return mw.Status.LastActivitySource, nil
	}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Equal(napwakev1alpha1.SourceUsage))

	By("it stays Running for twice its idleAfter while the use goes on")
	Consistently(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).
		WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Equal(napwakev1alpha1.PhaseRunning))
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.LastActivitySource).To(Equal(napwakev1alpha1.SourceUsage))
	Expect(mw.Annotations).NotTo(HaveKey(napwakev1alpha1.AnnotationLastRequest), "no request went through the doorman")

	By("left alone, it pauses")
	Expect(fw.Clientset.CoreV1().Pods(ns).Delete(ctx, load.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
	expectPausedAndRouted(ctx, ns, app.Name, 4*time.Minute)
	mw, err = fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.Pause.Reason).To(Equal(napwakev1alpha1.PauseIdle))
}
