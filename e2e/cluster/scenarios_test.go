//go:build e2e

package cluster

import (
	"context"
	"time"

	. "github.com/onsi/gomega"

	"napwake.dev/e2e/framework"
)

// scenarioClusterSmoke: a Deployment from a locally built image with a
// readiness probe becomes Ready behind a Service, and an HTTP request to the
// ClusterIP from the node reaches it through kube-proxy.
func scenarioClusterSmoke(ctx context.Context, ns string) {
	app := framework.SampleApp{Name: "smoke", Namespace: ns, Replicas: 2, StartupDelay: time.Second}
	Expect(fw.Deploy(ctx, app)).To(Succeed())
	Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, ns, app.Name) }).Should(Equal(int32(2)))
	ip, err := fw.ClusterIP(ctx, ns, app.Name)
	Expect(err).NotTo(HaveOccurred())
	// kube-proxy may need a moment after the endpoints appear: retry, bounded.
	Eventually(func(g Gomega) {
		resp, err := framework.HTTPGet(ctx, "http://"+ip+"/", nil, 3*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.Status).To(Equal(200))
		g.Expect(resp.Body).To(ContainSubstring("hello from the sample app"))
		g.Expect(resp.Header.Get("X-Sampleapp-Pod")).To(HavePrefix("smoke-"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
