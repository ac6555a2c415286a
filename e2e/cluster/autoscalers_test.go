//go:build e2e

package cluster

import (
	"context"
	"os"
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

var _ = Describe("Napwake beside the autoscalers already there", func() {
	BeforeEach(requireNapwake)
	It("pauses a workload under an HPA, which the real controller then leaves at zero, and wakes it to its saved count, after which the HPA acts again", func() {
		inNamespace("hpa", nil, scenarioHPA)
	})
})

// scenarioHPA (docs/pause.md "Under an HPA"): the
// controller-manager's HPA controller, fed by metrics-server, stops acting
// on a target at zero replicas (ScalingActive False ScalingDisabled), so a
// pause holds; the wake restores the count the pause saved, within the
// HPA's bounds, and the HPA is active again.
func scenarioHPA(ctx context.Context, ns string) {
	app := optedIn("api", ns, 2, longIdle)
	app.CPURequest = "10m"
	deployRunning(ctx, app)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app.Name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: app.Name},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)},
			}}},
		},
	}
	_, err := fw.Clientset.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	scalingActive := func(g Gomega) *autoscalingv2.HorizontalPodAutoscalerCondition {
		got, err := fw.Clientset.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, app.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		for i := range got.Status.Conditions {
			if got.Status.Conditions[i].Type == autoscalingv2.ScalingActive {
				return &got.Status.Conditions[i]
			}
		}
		return nil
	}
	By("the HPA acting on the running workload, with metrics-server's figures")
	hpaActive := func() {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			c := scalingActive(g)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(corev1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	}
	hpaActive()

	pauseNow(ctx, ns, app.Name)
	By("the HPA controller seeing the target at zero and standing down")
	Eventually(func(g Gomega) {
		c := scalingActive(g)
		g.Expect(c).NotTo(BeNil())
		g.Expect([]any{c.Status, c.Reason}).To(HaveExactElements(corev1.ConditionFalse, "ScalingDisabled"), c.Message)
	}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	d, err := fw.Clientset.AppsV1().Deployments(ns).Get(ctx, app.Name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(*d.Spec.Replicas).To(BeZero(), "the HPA left the paused workload at zero")
	Expect(fw.Phase(ctx, ns, app.Name)).To(Equal(napwakev1alpha1.PhasePaused))
	mw, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.Pause.Replicas).To(Equal(int32(2)), "the pause saved the HPA's count")

	By("kubectl napwake describe naming the HPA with its bounds")
	plugin := os.Getenv("NAPWAKE_E2E_KUBECTL_NAPWAKE")
	Expect(plugin).NotTo(BeEmpty(), "hack/e2e.sh sets NAPWAKE_E2E_KUBECTL_NAPWAKE")
	out, err := exec.CommandContext(ctx, plugin, "describe", "-n", ns, app.Name).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	Expect(string(out)).To(MatchRegexp(`Autoscalers:\s+HorizontalPodAutoscaler/api \(2 to 4 replicas\)`))

	By("an HPA changed while paused: reported, and the saved count still wins")
	hpaNow, err := fw.Clientset.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, app.Name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	hpaNow.Spec.MaxReplicas = 5
	_, err = fw.Clientset.AutoscalingV2().HorizontalPodAutoscalers(ns).Update(ctx, hpaNow, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() ([]string, error) {
		return fw.EventMessages(ctx, ns, "ManagedWorkload", app.Name, napwakev1alpha1.EventAutoscalerChanged)
	}).WithTimeout(time.Minute).Should(ContainElement(And(ContainSubstring("maxReplicas 4 → 5"), ContainSubstring("restores the 2 replicas"))))

	resp, err := framework.HTTPGet(ctx, serviceURL(app.Name, ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(200), "a request wakes it")
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, app.Name) }).WithTimeout(time.Minute).Should(Equal(int32(2)))
	By("the HPA acting again once the workload is up")
	hpaActive()
}
