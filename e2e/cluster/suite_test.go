//go:build e2e

// Package cluster is Napwake's end-to-end suite: real pods with real
// readiness probes, real Services through kube-proxy, on the local cluster
// `make e2e` brings up (or the one $KUBECONFIG names). Each scenario is a
// reusable function in scenarios_test.go with a thin Describe here.
package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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

// The digest: hack/e2e.sh prints it last, so that a CI log showing only
// its tail still says which spec failed and why, and which passed only on
// a second attempt (-ginkgo.flake-attempts).
var _ = ReportAfterSuite("the failure digest", func(r Report) {
	path := os.Getenv("NAPWAKE_E2E_DIGEST")
	if path == "" {
		return
	}
	var b strings.Builder
	for _, s := range r.SpecReports {
		switch {
		case s.Failed():
			fmt.Fprintf(&b, "FAILED %s (%d attempts)\n  %s to %s (%s), at %s\n  %s\n\n", s.FullText(), s.NumAttempts,
				s.StartTime.Format(time.TimeOnly), s.EndTime.Format(time.TimeOnly), s.RunTime.Round(time.Second),
				s.Failure.Location, digestMessage(s.Failure.Message))
		case s.NumAttempts > 1:
			// Passed on a later attempt: the suite passes, and says so, with
			// the first attempt's failure and dumps in the log above.
			fmt.Fprintf(&b, "FLAKED %s: passed on attempt %d of %d, %s to %s; search the log for [FLAKEY TEST] and its first attempt's failure\n\n",
				s.FullText(), s.NumAttempts, s.MaxFlakeAttempts, s.StartTime.Format(time.TimeOnly), s.EndTime.Format(time.TimeOnly))
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintf(GinkgoWriter, "writing the failure digest %s: %v\n", path, err)
	}
})

// digestMessage keeps a failure's first 1500 characters, indented.
func digestMessage(m string) string {
	if len(m) > 1500 {
		m = m[:1500] + " [...]"
	}
	return strings.ReplaceAll(strings.TrimSpace(m), "\n", "\n  ")
}

// inNamespace runs body in a fresh namespace, dumping it when the spec fails.
func inNamespace(prefix string, labels map[string]string, body func(ctx context.Context, ns string)) {
	ctx := context.Background()
	ns, err := fw.CreateNamespace(ctx, prefix, labels)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		if r := CurrentSpecReport(); r.Failed() {
			fw.Dump(ctx, GinkgoWriter, ns)
			framework.DumpProxyRules(ctx, GinkgoWriter, ns)
			if napwakeNS := os.Getenv("NAPWAKE_E2E_NAMESPACE"); napwakeNS != "" {
				fw.DumpComponents(ctx, GinkgoWriter, napwakeNS, ns, r.StartTime)
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

// requireNapwake fails a spec that needs Napwake installed (hack/e2e.sh
// does it) when it is not.
func requireNapwake() {
	if os.Getenv("NAPWAKE_E2E_NAMESPACE") == "" {
		Fail("Napwake is not installed: run the suite through hack/e2e.sh (make e2e)")
	}
}

// The Napwake scenarios need Napwake installed.
var _ = Describe("Napwake", func() {
	BeforeEach(requireNapwake)
	It("pauses a Deployment opted in by label once it is idle, and routes its Service to the doorman", func() {
		inNamespace("idle", nil, scenarioPausesWhenIdle)
	})
	It("holds a request from a client pod, wakes the workload and answers from the app", func() {
		inNamespace("request", nil, scenarioWokenByRequest)
	})
	It("gives a browser the waking-up page, and a reload reaches the app", func() {
		inNamespace("browser", nil, scenarioBrowserGetsWakingPage)
	})
	It("answers a known probe 503 and a hidden file 404, waking nothing", func() {
		inNamespace("probes", nil, scenarioProbesWakeNothing)
	})
	It("wakes a server-speaks-first service after 3 s of silence and passes the greeting on", func() {
		inNamespace("greet", nil, scenarioServerSpeaksFirst)
	})
	It("pauses and wakes a StatefulSet with its replica count intact", func() {
		inNamespace("sts", nil, scenarioStatefulSet)
	})
	It("moves routes off a deleted doorman pod, and a request still wakes", Serial, func() {
		inNamespace("doorman", nil, scenarioDoormanPodDeleted)
	})
	It("never loses a workload when the operator restarts mid-pause", Serial, func() {
		inNamespace("restart", nil, scenarioOperatorRestartMidPause)
	})
	It("wakes a three-tier environment as one, and learns who calls whom", func() {
		inNamespace("env", nil, scenarioEnvironmentWakesAsOne)
	})
	It("drives status, wake --wait and pause --wait with kubectl napwake", func() {
		inNamespace("cli", nil, scenarioKubectlPlugin)
	})
	It("keeps paused workloads paused and routed through a doorman-only Helm upgrade", Serial, func() {
		inNamespace("upgrade", nil, scenarioDoormanUpgrade)
	})
	// Started early among the parallel specs (SpecPriority): about 3 minutes.
	It("keeps a queue worker up while its Prometheus activity query returns work, pauses it, and wakes it when work returns", SpecPriority(1), func() {
		inNamespace("query", nil, scenarioActivityQuery)
	})
	It("routes a Service shared by two paused workloads, and one request wakes both", func() {
		inNamespace("shared", nil, scenarioSharedService)
	})
	It("adds little to a cold start: p99 of Napwake's added time within the bound (60 ms target)", Serial, func() {
		inNamespace("coldstart", nil, func(ctx context.Context, ns string) {
			// 20 wakes in the suite; make bench-wake runs 50
			// (NAPWAKE_E2E_COLDSTART_WAKES).
			n := 20
			if v, err := strconv.Atoi(os.Getenv("NAPWAKE_E2E_COLDSTART_WAKES")); err == nil && v > 0 {
				n = v
			}
			overheads := scenarioColdStartOverhead(ctx, ns, n)
			p50, p99, _ := percentiles(overheads)
			// The targets are 30 ms at p50 and 60 ms at p99
			// (docs/bench/coldstart.md has the measurements). On a shared
			// 2-core CI machine the default bound catches regressions
			// without flaking on scheduling noise;
			// NAPWAKE_E2E_STRICT_TIMING=1 asserts the targets themselves.
			bound50, bound99 := 150*time.Millisecond, 300*time.Millisecond
			if os.Getenv("NAPWAKE_E2E_STRICT_TIMING") != "" {
				bound50, bound99 = 30*time.Millisecond, 60*time.Millisecond
			}
			Expect(p50).To(BeNumerically("<=", bound50), "p50 of %d wakes", n)
			Expect(p99).To(BeNumerically("<=", bound99), "p99 of %d wakes", n)
		})
	})
})
