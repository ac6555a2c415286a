//go:build e2e

package cluster

import (
	"context"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

var _ = Describe("An Argo Rollout", func() {
	BeforeEach(requireNapwake)
	It("pauses through its scale subresource, routes to the doorman, and a request wakes it to its saved count, on Argo Rollouts' real controller", func() {
		inNamespace("rollout", nil, scenarioArgoRollout)
	})
})

// rolloutGVK is Argo Rollouts' Rollout, which hack/testbed/argo-rollouts.sh
// installs with its real controller.
const rolloutAPIVersion, rolloutKind = "argoproj.io/v1alpha1", "Rollout"

// scenarioArgoRollout: a canary Rollout of the sample app, opted in with a
// ManagedWorkload naming apiVersion and kind, pauses (its Rollout scaled to
// 0 through /scale, the saved count recorded, its pods gone, its Service
// led to the doorman), and a request through the Service wakes it: 200
// from the app, the Rollout back at 2 Ready pods its controller made.
func scenarioArgoRollout(ctx context.Context, ns string) {
	if os.Getenv("NAPWAKE_E2E_ARGO_ROLLOUTS") == "" {
		Skip("Argo Rollouts is not installed: hack/e2e.sh installs it unless E2E_ARGO_ROLLOUTS=0")
	}
	app := framework.SampleApp{Name: "web", Namespace: ns, Replicas: 2, StartupDelay: 2 * time.Second}
	d := app.Deployment()
	template, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d.Spec.Template)
	Expect(err).NotTo(HaveOccurred())
	selector, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d.Spec.Selector)
	Expect(err).NotTo(HaveOccurred())
	ro := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rolloutAPIVersion, "kind": rolloutKind,
		"metadata": map[string]any{"name": app.Name, "namespace": ns},
		"spec": map[string]any{
			"replicas": int64(2), "selector": selector, "template": template,
			"strategy": map[string]any{"canary": map[string]any{}},
		},
	}}
	Expect(fw.Client.Create(ctx, ro)).To(Succeed())
	_, err = fw.Clientset.CoreV1().Services(ns).Create(ctx, app.Service(), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	readyPods := func() (int64, error) {
		got := &unstructured.Unstructured{}
		got.SetAPIVersion(rolloutAPIVersion)
		got.SetKind(rolloutKind)
		if err := fw.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app.Name}, got); err != nil {
			return 0, err
		}
		n, _, _ := unstructured.NestedInt64(got.Object, "status", "readyReplicas")
		return n, nil
	}
	Eventually(readyPods).WithTimeout(2*time.Minute).Should(Equal(int64(2)), "Argo Rollouts' controller brings the Rollout up")

	mw := &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: ns},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			TargetRef: napwakev1alpha1.TargetRef{APIVersion: rolloutAPIVersion, Kind: napwakev1alpha1.TargetKind(rolloutKind), Name: app.Name},
			IdleAfter: &metav1.Duration{Duration: 30 * time.Minute},
		},
	}
	Expect(fw.Client.Create(ctx, mw)).To(Succeed())
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).
		WithTimeout(time.Minute).Should(Equal(napwakev1alpha1.PhaseRunning))

	pauseNow(ctx, ns, app.Name)
	got, err := fw.ManagedWorkload(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(got.Status.Pause).NotTo(BeNil())
	Expect(got.Status.Pause.Replicas).To(Equal(int32(2)), "the Rollout's count, saved through /scale")

	resp, err := framework.HTTPGet(ctx, serviceURL(app.Name, ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(200))
	Expect(resp.Body).To(ContainSubstring("hello from the sample app"))
	Eventually(readyPods).WithTimeout(2*time.Minute).Should(Equal(int64(2)), "woken to its saved count")
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, app.Name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
}
