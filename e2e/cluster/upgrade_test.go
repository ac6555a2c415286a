//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

var _ = Describe("Upgrading from the previous release", Serial, func() {
	BeforeEach(requireNapwake)
	It("keeps every saved replica count and route, answers callers held across the upgrade, and upgrades the CRD", func() {
		inNamespace("upgrade", nil, scenarioUpgradeFromThePreviousRelease)
	})
})

// previousImage is where hack/previous-release.sh names the previous
// release's images, loaded into the node by hack/e2e.sh.
const previousImage = "napwake.previous/napwake-"

// scenarioUpgradeFromThePreviousRelease installs the previous release
// (hack/previous-release: its own chart, CRD in crds/, and images), pauses
// workloads under it, then upgrades to this tree as docs/upgrade.md says for
// such an install (its adopt-crd block, as written, with this tree's image
// names added to the helm upgrade, since the old release was installed with
// its own), with callers held on a paused workload before and during the
// upgrade. Afterwards: every caller answered 200 by the app; a workload
// paused through the upgrade still Paused, its saved count kept, its Service
// led to the new doorman pods, and woken by a request to that count; a
// running one untouched; the CRD the chart's, with its keep policy and this
// tree's schema. The suite's own install is put back at the end.
func scenarioUpgradeFromThePreviousRelease(ctx context.Context, ns string) {
	previous := os.Getenv("NAPWAKE_E2E_PREVIOUS_RELEASE")
	if previous == "" {
		Skip("no previous release to upgrade from: hack/e2e.sh builds it (hack/previous-release.sh) when the clone has the commit hack/previous-release names, and said above why it did not")
	}
	install := os.Getenv("NAPWAKE_E2E_INSTALL")
	Expect(install).NotTo(BeEmpty(), "hack/e2e.sh sets NAPWAKE_E2E_INSTALL")
	DeferCleanup(func(ctx context.Context) {
		out, err := exec.CommandContext(ctx, "bash", "-c", install).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "putting the suite's install back: %s", out)
	})

	By("removing the suite's install and its CRD, then installing the previous release from its own chart and images")
	runAsUser(ctx, readmeBlock("uninstall"))
	runAsUser(ctx, docBlock("docs/uninstall.md", "remove-crd"))
	version := func(c string) string {
		v, err := os.ReadFile(filepath.Join(previous, c, "VERSION"))
		Expect(err).NotTo(HaveOccurred())
		return strings.TrimSpace(string(v))
	}
	runAsUser(ctx, fmt.Sprintf(`helm install napwake %s -n napwake-system --create-namespace --wait --timeout 3m \
  --set operator.image.repository=%soperator --set operator.image.tag=%s \
  --set doorman.image.repository=%sdoorman --set doorman.image.tag=%s`,
		filepath.Join(previous, "charts", "napwake"), previousImage, version("operator"), previousImage, version("doorman")))
	expectImages(ctx, previousImage)

	paused := optedIn("paused", ns, 2, longIdle)
	held := optedIn("held", ns, 1, longIdle)
	// Its pods become Ready 10 s after they start, so the wake the held
	// callers cause is under way while the operator and doorman roll.
	held.StartupDelay = 10 * time.Second
	running := optedIn("running", ns, 2, longIdle)
	for _, app := range []framework.SampleApp{paused, held, running} {
		deployRunning(ctx, app)
	}
	pauseNow(ctx, ns, paused.Name)
	pauseNow(ctx, ns, held.Name)

	call := func(results chan<- error) {
		defer GinkgoRecover()
		r, err := framework.HTTPGet(ctx, serviceURL(held.Name, ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 3*time.Minute)
		switch {
		case err != nil:
			results <- err
		case r.Status != 200 || !strings.Contains(r.Body, "hello from the sample app"):
			results <- fmt.Errorf("answered %d %q; want 200 from the app", r.Status, r.Body)
		default:
			results <- nil
		}
	}
	results := make(chan error, 4)
	go call(results)
	go call(results)
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, held.Name) }).
		Should(Equal(napwakev1alpha1.PhaseResuming), "the held callers woke it under the previous release")

	By("upgrading to this tree as docs/upgrade.md says, with two more callers sent while it rolls")
	upgrade := strings.Replace(docBlock("docs/upgrade.md", "adopt-crd"), "--reset-then-reuse-values",
		"--reset-then-reuse-values --wait --timeout 3m"+
			" --set operator.image.repository=napwake.local/napwake-operator"+
			" --set doorman.image.repository=napwake.local/napwake-doorman", 1)
	Expect(upgrade).To(ContainSubstring("napwake.local/napwake-doorman"), "docs/upgrade.md's block has its helm upgrade line")
	go func() {
		defer GinkgoRecover()
		// Sent once the new doorman's pods exist, so while the old ones stop.
		Eventually(func() (bool, error) { return hasPodWithImage(ctx, "napwake.local/napwake-doorman") }).
			WithTimeout(time.Minute).Should(BeTrue())
		go call(results)
		go call(results)
	}()
	start := time.Now()
	runAsUser(ctx, upgrade)
	By(fmt.Sprintf("helm upgrade returned after %s", time.Since(start).Round(time.Second)))
	expectImages(ctx, "napwake.local/napwake-")

	for i := range 4 {
		var err error
		Eventually(results).WithTimeout(3*time.Minute).Should(Receive(&err), "caller %d of 4 was answered", i+1)
		Expect(err).NotTo(HaveOccurred(), "a caller held across the upgrade")
	}

	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	Expect(fw.Client.Get(ctx, client.ObjectKey{Name: "managedworkloads.napwake.dev"}, crd)).To(Succeed())
	Expect(crd.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"), "the release owns the CRD now")
	Expect(crd.GetAnnotations()).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	Expect(versions).To(HaveLen(1))
	conditions, _, _ := unstructured.NestedString(versions[0].(map[string]any),
		"schema", "openAPIV3Schema", "properties", "status", "properties", "conditions", "description")
	Expect(conditions).To(ContainSubstring("Autoscalers, CronJobs"), "the CRD's schema is this tree's")

	mw, err := fw.ManagedWorkload(ctx, ns, paused.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mw.Status.Phase).To(Equal(napwakev1alpha1.PhasePaused), "a workload paused through the upgrade stays paused")
	Expect(mw.Status.Pause).NotTo(BeNil())
	Expect(mw.Status.Pause.Replicas).To(Equal(int32(2)), "its saved count is kept")
	expectPausedAndRouted(ctx, ns, paused.Name, time.Minute)
	Expect(fw.ReadyReplicas(ctx, ns, running.Name)).To(Equal(int32(2)), "a running workload is untouched")
	Expect(fw.Phase(ctx, ns, running.Name)).To(Equal(napwakev1alpha1.PhaseRunning))

	By("waking the workload paused through the upgrade with a request to the new doorman")
	resp, err := framework.HTTPGet(ctx, serviceURL(paused.Name, ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(200))
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, paused.Name) }).
		WithTimeout(2*time.Minute).Should(Equal(int32(2)), "it wakes to its saved count")
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, held.Name) }).Should(Equal(int32(1)))
}

// expectImages waits until the operator's and the doorman's Deployments run
// images named prefix+component, every replica Ready and updated.
func expectImages(ctx context.Context, prefix string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, c := range []string{"operator", "doorman"} {
			d, err := fw.Clientset.AppsV1().Deployments(napwakeNS).Get(ctx, "napwake-"+c, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(HavePrefix(prefix+c+":"), "napwake-%s's image", c)
			g.Expect(d.Status.UpdatedReplicas).To(Equal(*d.Spec.Replicas))
			g.Expect(d.Status.ReadyReplicas).To(Equal(*d.Spec.Replicas))
			g.Expect(d.Status.Replicas).To(Equal(*d.Spec.Replicas), "napwake-%s's old pods are gone", c)
		}
	}).WithTimeout(3 * time.Minute).Should(Succeed())
}

// hasPodWithImage says whether a pod in Napwake's namespace runs image
// (any tag).
func hasPodWithImage(ctx context.Context, image string) (bool, error) {
	pods, err := fw.Clientset.CoreV1().Pods(napwakeNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Spec.Containers[0].Image, image+":") {
			return true, nil
		}
	}
	return false, nil
}
