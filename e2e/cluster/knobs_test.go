//go:build e2e

package cluster

import (
	"context"
	"os"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ = Describe("The chart's pod knobs", func() {
	BeforeEach(requireNapwake)
	It("run the operator and the doorman with extra env and volumes, ServiceAccount annotations, no fixed user and a topology spread", func() {
		scenarioChartKnobs(context.Background())
	})
})

// scenarioChartKnobs: the suite installs Napwake with the pod knobs a user
// on a restricted platform sets (hack/install-napwake.sh,
// NAPWAKE_E2E_KNOBS), and every other spec runs under them; here the
// running pods are read back: each Ready, with the extra env var and
// volume, no runAsUser or runAsGroup in its pod security context (the
// image's own user, non-root, runs it), the topology spread, and its
// ServiceAccount annotated.
func scenarioChartKnobs(ctx context.Context) {
	if os.Getenv("NAPWAKE_E2E_KNOBS") == "" {
		Skip("the suite's install has no knobs: hack/e2e.sh sets NAPWAKE_E2E_KNOBS")
	}
	for _, c := range []string{"operator", "doorman"} {
		name := "napwake-" + c
		d, err := fw.Clientset.AppsV1().Deployments(napwakeNS).Get(ctx, name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Status.ReadyReplicas).To(Equal(*d.Spec.Replicas), "%s's pods are Ready under the knobs", name)
		pods, err := fw.Clientset.CoreV1().Pods(napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		Expect(err).NotTo(HaveOccurred())
		Expect(pods.Items).NotTo(BeEmpty())
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			sc := p.Spec.SecurityContext
			Expect(sc.RunAsUser).To(BeNil(), "pod %s: no fixed user", p.Name)
			Expect(sc.RunAsGroup).To(BeNil(), "pod %s: no fixed group", p.Name)
			Expect(*sc.RunAsNonRoot).To(BeTrue())
			main := p.Spec.Containers[0]
			Expect(main.Env).To(ContainElement(corev1.EnvVar{Name: "NAPWAKE_E2E_KNOB", Value: "on"}), "pod %s: extraEnv", p.Name)
			Expect(slices.ContainsFunc(main.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == "e2e-knob" && m.MountPath == "/e2e-knob"
			})).To(BeTrue(), "pod %s: extraVolumeMounts", p.Name)
			Expect(slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "e2e-knob" && v.EmptyDir != nil })).
				To(BeTrue(), "pod %s: extraVolumes", p.Name)
			Expect(p.Spec.TopologySpreadConstraints).To(ContainElement(HaveField("TopologyKey", "kubernetes.io/hostname")), "pod %s: topologySpreadConstraints", p.Name)
			Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		}
		sa, err := fw.Clientset.CoreV1().ServiceAccounts(napwakeNS).Get(ctx, d.Spec.Template.Spec.ServiceAccountName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(sa.Annotations).To(HaveKeyWithValue("napwake.dev/e2e-knob", "on"), "%s's ServiceAccount", name)
	}
}
