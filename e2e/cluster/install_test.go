//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

var _ = Describe("Napwake installed and removed as the README says", Serial, func() {
	BeforeEach(requireNapwake)
	It("uninstalls leaving paused, pausing and waking workloads at their saved replicas, answering from their own pods; installs from a registry with no tag given, then pauses and wakes", func() {
		inNamespace("life", nil, scenarioLifeOfAnInstall)
	})
})

// userRegistry stands in for the user's registry: hack/tools/registry on
// the node's address, which the test bed's containerd pulls from over plain
// HTTP (hack/testbed/cluster.sh).
const userRegistry = "10.200.0.1:5000"

// readmeExample is the placeholder registry in the README's commands.
const readmeExample = "registry.example.com/napwake"

// repoRoot is the repository the suite was built from (hack/e2e.sh says).
func repoRoot() string {
	root := os.Getenv("NAPWAKE_E2E_ROOT")
	Expect(root).NotTo(BeEmpty(), "hack/e2e.sh sets NAPWAKE_E2E_ROOT")
	return root
}

// readmeBlock returns the shell block that follows the README's marker
// `<!-- e2e: name ... -->`, exactly as a user would copy it.
func readmeBlock(name string) string {
	GinkgoHelper()
	return docBlock("README.md", name)
}

// docBlock is readmeBlock for any page of the repository.
func docBlock(page, name string) string {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(), page))
	Expect(err).NotTo(HaveOccurred())
	text := string(raw)
	at := strings.Index(text, "<!-- e2e: "+name)
	Expect(at).To(BeNumerically(">=", 0), "%s has no <!-- e2e: %s --> marker", page, name)
	rest := text[at:]
	open := strings.Index(rest, "```sh\n")
	Expect(open).To(BeNumerically(">=", 0))
	rest = rest[open+len("```sh\n"):]
	end := strings.Index(rest, "```")
	Expect(end).To(BeNumerically(">", 0))
	return rest[:end]
}

// runAsUser runs a documented block with bash in the repository's root,
// the pinned helm, kubectl and kubectl-napwake on PATH, as a user at a
// terminal would.
func runAsUser(ctx context.Context, block string, env ...string) {
	GinkgoHelper()
	By("running, as written in the docs:\n" + block)
	plugin := os.Getenv("NAPWAKE_E2E_KUBECTL_NAPWAKE")
	Expect(plugin).NotTo(BeEmpty(), "hack/e2e.sh sets NAPWAKE_E2E_KUBECTL_NAPWAKE")
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(repoRoot(), "bin")+":"+filepath.Dir(plugin)+":"+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Run()).To(Succeed(), "the README's commands failed; their output is above")
}

// scenarioLifeOfAnInstall: `helm uninstall` as the README says, with
// workloads paused, pausing and waking and a caller held, leaves each at its
// saved replicas answering from its own pods, with no Napwake EndpointSlice
// left and the held caller answered; then the README's install, from a
// registry with no image tag given, pauses and wakes a workload. The
// suite's own install is put back at the end.
func scenarioLifeOfAnInstall(ctx context.Context, ns string) {
	install := os.Getenv("NAPWAKE_E2E_INSTALL")
	Expect(install).NotTo(BeEmpty(), "hack/e2e.sh sets NAPWAKE_E2E_INSTALL")
	DeferCleanup(func(ctx context.Context) {
		out, err := exec.CommandContext(ctx, "bash", "-c", install).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "putting the suite's install back: %s", out)
	})

	paused := optedIn("paused", ns, 2, longIdle)
	// Its pods serve 60 s after SIGTERM: the workload stays Pausing.
	pausing := optedIn("pausing", ns, 2, longIdle)
	pausing.ShutdownDelay = time.Minute
	waking := optedIn("waking", ns, 1, longIdle)
	for _, app := range []framework.SampleApp{paused, pausing, waking} {
		deployRunning(ctx, app)
	}
	pauseNow(ctx, ns, paused.Name)
	pauseNow(ctx, ns, waking.Name)
	// While paused (no pods), its next start is made to take 40 s, so the
	// wake asked for below is still under way when the uninstall comes.
	Expect(fw.Clientset.AppsV1().Deployments(ns).Get(ctx, waking.Name, metav1.GetOptions{})).To(WithTransform(func(d *appsv1.Deployment) error {
		d.Spec.Template.Spec.Containers[0].Args = []string{"--startup-delay=40s"}
		_, err := fw.Clientset.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	}, Succeed()))
	Expect(fw.Annotate(ctx, ns, waking.Name, map[string]string{napwakev1alpha1.AnnotationWakeRequested: time.Now().UTC().Format(time.RFC3339)})).To(Succeed())
	Expect(fw.RequestPause(ctx, ns, pausing.Name)).To(Succeed())
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, pausing.Name) }).Should(Equal(napwakev1alpha1.PhasePausing))
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, waking.Name) }).Should(Equal(napwakev1alpha1.PhaseResuming))

	// A caller held by the doorman as the uninstall begins.
	held := make(chan framework.Response, 1)
	heldErr := make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		r, err := framework.HTTPGet(ctx, serviceURL(paused.Name, ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 4*time.Minute)
		held <- r
		heldErr <- err
	}()

	start := time.Now()
	runAsUser(ctx, readmeBlock("uninstall"))
	By(fmt.Sprintf("helm uninstall returned after %s", time.Since(start).Round(time.Second)))
	Expect(fw.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + pausing.Name})).To(WithTransform(
		func(l *corev1.PodList) int { return len(l.Items) }, BeNumerically(">", 2)), "the pausing one's old pods were still stopping when the hook scaled it back")

	for _, want := range []struct {
		name     string
		replicas int32
	}{{paused.Name, 2}, {pausing.Name, 2}, {waking.Name, 1}} {
		d, err := fw.Clientset.AppsV1().Deployments(ns).Get(ctx, want.name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(*d.Spec.Replicas).To(Equal(want.replicas), "%s is back at its saved replicas", want.name)
		Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, want.name) }).
			WithTimeout(2*time.Minute).Should(Equal(want.replicas), "%s's pods are Ready", want.name)
		Expect(fw.DoormanSlices(ctx, ns, want.name)).To(BeEmpty(), "no Napwake EndpointSlice is left for %s", want.name)
		resp, err := framework.HTTPGet(ctx, serviceURL(want.name, ns, "/"), nil, 30*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(Equal(200), "%s answers from its own pods", want.name)
		Expect(resp.Body).To(ContainSubstring("hello from the sample app"))
		mw, err := fw.ManagedWorkload(ctx, ns, want.name)
		Expect(err).NotTo(HaveOccurred())
		Expect(mw.Finalizers).To(BeEmpty(), "no finalizer waits for an operator that is gone")
	}
	Eventually(heldErr).WithTimeout(time.Minute).Should(Receive(BeNil()), "the held caller was answered")
	Expect((<-held).Status).To(Equal(200))
	Eventually(func(g Gomega) {
		pods, err := fw.Clientset.CoreV1().Pods(napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: napwakev1alpha1.LabelAppName + "=" + napwakev1alpha1.AppName})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(BeEmpty(), "Napwake's pods are gone")
	}).WithTimeout(time.Minute).Should(Succeed())
	for _, name := range []string{paused.Name, pausing.Name, waking.Name} {
		mw, err := fw.ManagedWorkload(ctx, ns, name)
		Expect(err).NotTo(HaveOccurred())
		Expect(mw.Status.Phase).To(Equal(napwakev1alpha1.PhaseRunning), "%s says what is true: a later install finishes no pause", name)
		Expect(mw.Status.Pause).To(BeNil())
	}

	By("installing as the README says, from a registry, no tag given")
	stopRegistry := startUserRegistry(ctx)
	DeferCleanup(stopRegistry)
	runAsUser(ctx, strings.ReplaceAll(readmeBlock("install"), readmeExample, userRegistry+"/napwake"), "PUSH_FLAGS=--insecure")
	expectInstalledFromTheRegistry(ctx)
	app := optedIn("readme", ns, 1, longIdle)
	deployRunning(ctx, app)
	expectPausesAndWakes(ctx, ns, app.Name)
	runAsUser(ctx, readmeBlock("uninstall"))

	By("removing the CRD as docs/uninstall.md says, then installing with the README's Kustomize overlay, and removing that as docs/uninstall.md says without Helm")
	// Helm leaves the CRD; kubectl apply --server-side would find its
	// fields owned by Helm's manager. A user moving from Helm to Kustomize
	// removes it first, ManagedWorkloads and all.
	runAsUser(ctx, docBlock("docs/uninstall.md", "remove-crd"))
	DeferCleanup(func() { _ = os.RemoveAll(filepath.Join(repoRoot(), "napwake-overlay")) })
	runAsUser(ctx, strings.ReplaceAll(readmeBlock("kustomize"), readmeExample, userRegistry+"/napwake"))
	expectInstalledFromTheRegistry(ctx)
	kust := optedIn("kust", ns, 2, longIdle)
	deployRunning(ctx, kust)
	pauseNow(ctx, ns, kust.Name)
	runAsUser(ctx, docBlock("docs/uninstall.md", "uninstall-without-helm"))
	Expect(fw.Clientset.AppsV1().Deployments(ns).Get(ctx, kust.Name, metav1.GetOptions{})).To(WithTransform(
		func(d *appsv1.Deployment) int32 { return *d.Spec.Replicas }, Equal(int32(2))), "kubectl napwake restore -A put it back at its saved replicas")
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, kust.Name) }).WithTimeout(2 * time.Minute).Should(Equal(int32(2)))
	Expect(fw.DoormanSlices(ctx, ns, kust.Name)).To(BeEmpty(), "no Napwake EndpointSlice is left")
	resp, err := framework.HTTPGet(ctx, serviceURL(kust.Name, ns, "/"), nil, 30*time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(200), "it answers from its own pods")
	// kubectl delete -k took the namespace with it; the suite's install
	// goes back into it once it is gone.
	Eventually(func() bool {
		_, err := fw.Clientset.CoreV1().Namespaces().Get(ctx, napwakeNS, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(3*time.Minute).Should(BeTrue(), "namespace %s is gone", napwakeNS)
}

// expectInstalledFromTheRegistry waits for the operator and the doorman to
// be Ready with images from userRegistry, tagged by the chart's default:
// what make push wrote.
func expectInstalledFromTheRegistry(ctx context.Context) {
	GinkgoHelper()
	version, err := os.ReadFile(filepath.Join(repoRoot(), "operator", "VERSION"))
	Expect(err).NotTo(HaveOccurred())
	wantImage := userRegistry + "/napwake/napwake-operator:" + strings.TrimSpace(string(version))
	Eventually(func(g Gomega) {
		for _, name := range []string{"napwake-operator", "napwake-doorman"} {
			d, err := fw.Clientset.AppsV1().Deployments(napwakeNS).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.ReadyReplicas).To(Equal(*d.Spec.Replicas), "%s is Ready, its image pulled from the registry", name)
			if name == "napwake-operator" {
				g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(wantImage), "the chart's default tag is what make push wrote")
			}
		}
	}).WithTimeout(3 * time.Minute).Should(Succeed())
}

// expectPausesAndWakes pauses name and wakes it with a request.
func expectPausesAndWakes(ctx context.Context, ns, name string) {
	GinkgoHelper()
	pauseNow(ctx, ns, name)
	resp, err := framework.HTTPGet(ctx, serviceURL(name, ns, "/"), map[string]string{"User-Agent": "e2e-client/1"}, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Status).To(Equal(200), "a request wakes it")
	Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, ns, name) }).Should(Equal(napwakev1alpha1.PhaseRunning))
}

// startUserRegistry serves an empty in-memory registry on userRegistry and
// returns what stops it.
func startUserRegistry(ctx context.Context) func() {
	bin := filepath.Join(repoRoot(), "bin", "registry")
	Expect(bin).To(BeAnExistingFile(), "hack/e2e.sh builds bin/registry")
	cmd := exec.CommandContext(ctx, bin, "--listen", userRegistry)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	Eventually(func() error {
		c, err := net.DialTimeout("tcp", userRegistry, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}).Should(Succeed(), "the registry listens")
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}
