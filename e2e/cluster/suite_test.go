//go:build e2e

// Package cluster is Napwake's end-to-end suite: real pods with real
// readiness probes, real Services through kube-proxy, on the local cluster
// `make e2e` brings up (or the one $KUBECONFIG names). Each scenario is a
// reusable function in scenarios_test.go with a thin Describe here.
package cluster

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"napwake.dev/e2e/framework"
)

var fw *framework.Framework

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "Napwake end-to-end")
}

var _ = BeforeSuite(func() {
	var err error
	fw, err = framework.New()
	Expect(err).NotTo(HaveOccurred())
})

// inNamespace runs body in a fresh namespace, dumping it when the spec fails.
func inNamespace(prefix string, labels map[string]string, body func(ctx context.Context, ns string)) {
	ctx := context.Background()
	ns, err := fw.CreateNamespace(ctx, prefix, labels)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			fw.Dump(ctx, GinkgoWriter, ns)
			if napwakeNS := os.Getenv("NAPWAKE_E2E_NAMESPACE"); napwakeNS != "" {
				fw.DumpComponents(ctx, GinkgoWriter, napwakeNS)
			}
		}
		fw.DeleteNamespace(ctx, ns)
	})
	body(ctx, ns)
}

var _ = Describe("The local cluster", func() {
	It("runs a probed Deployment and serves it through its Service's ClusterIP", func() {
		inNamespace("smoke", nil, scenarioClusterSmoke)
	})
})
