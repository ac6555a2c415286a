//go:build e2e

package cluster

import (
	"context"
	"os"
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

var _ = Describe("People's access through the built-in roles", func() {
	BeforeEach(requireNapwake)
	It("lets a namespace viewer see but not pause, and an editor pause and wake, with the plugin run as each", func() {
		inNamespace("people", nil, scenarioPeoplesAccess)
	})
})

// scenarioPeoplesAccess: on the local cluster, with the chart's roles
// aggregated into the built-in view and edit by the real controller
// manager, a user bound to view in the namespace runs `kubectl napwake
// status` (allowed) and `pause` (refused, naming the role to ask for), and
// a user bound to edit pauses and wakes; neither reaches another namespace.
func scenarioPeoplesAccess(ctx context.Context, ns string) {
	plugin := os.Getenv("NAPWAKE_E2E_KUBECTL_NAPWAKE")
	Expect(plugin).NotTo(BeEmpty(), "hack/e2e.sh sets NAPWAKE_E2E_KUBECTL_NAPWAKE")
	app := optedIn("team", ns, 1, longIdle)
	deployRunning(ctx, app)
	const viewer, editor = "viewer@e2e.napwake.dev", "editor@e2e.napwake.dev"
	for user, role := range map[string]string{viewer: "view", editor: "edit"} {
		_, err := fw.Clientset.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role + "-people"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	as := func(user, namespace string, args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, plugin, append(args, "--as", user, "-n", namespace)...).CombinedOutput()
		return string(out), err
	}

	By("the viewer sees the workload, once the binding is in the authorizer's cache")
	Eventually(func() (string, error) { return as(viewer, ns, "status") }).WithTimeout(30 * time.Second).
		Should(ContainSubstring(app.Name))
	out, err := as(viewer, ns, "describe", app.Name)
	Expect(err).NotTo(HaveOccurred(), out)
	out, err = as(viewer, ns, "pause", app.Name)
	Expect(err).To(HaveOccurred(), "a viewer may not pause: %s", out)
	Expect(out).To(ContainSubstring("edit"), "the refusal names the role to ask for")
	Expect(fw.Phase(ctx, ns, app.Name)).To(Equal(napwakev1alpha1.PhaseRunning))
	_, err = as(viewer, napwakeNS, "status")
	Expect(err).To(HaveOccurred(), "a viewer of one namespace sees no other")

	By("the editor pauses and wakes it")
	Eventually(func() error { _, err := as(editor, ns, "status"); return err }).WithTimeout(30 * time.Second).Should(Succeed())
	out, err = as(editor, ns, "pause", app.Name, "--wait", "--timeout", "2m")
	Expect(err).NotTo(HaveOccurred(), out)
	Expect(fw.Phase(ctx, ns, app.Name)).To(Equal(napwakev1alpha1.PhasePaused))
	out, err = as(editor, ns, "wake", app.Name, "--wait", "--timeout", "2m")
	Expect(err).NotTo(HaveOccurred(), out)
	Expect(fw.Phase(ctx, ns, app.Name)).To(Equal(napwakev1alpha1.PhaseRunning))
}
