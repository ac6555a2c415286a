//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
)

// The faults a production cluster brings, on the real parts
// (docs/design/faults.md#proof-on-real-parts). The specs of one container run in the order
// written: the one after the API server's outage shows the cluster healthy.
var _ = Describe("Napwake under faults", Serial, func() {
	BeforeEach(requireNapwake)
	It("holds connections through 30 s without the API server, and wakes every workload once it is back", func() {
		inNamespace("outage", nil, scenarioAPIServerAway)
	})
	It("after the API server's outage, still holds a request, wakes the workload and answers from the app", func() {
		inNamespace("afteroutage", nil, scenarioWokenByRequest)
	})
	It("refuses nothing through a doorman rollout mid-traffic, and loses few connections to a SIGKILLed doorman pod", func() {
		inNamespace("rollout", nil, scenarioDoormanRolloutMidTraffic)
	})
	It("pauses a workload 20 times in a row under a looping client with no refusal and no reset", func() {
		inNamespace("pauses", nil, func(ctx context.Context, ns string) {
			scenarioPausesUnderTraffic(ctx, ns, howItStops{shutdownDelay: 5 * time.Second})
		})
	})
	It("pauses a workload with a 5 s preStop 20 times under a looping client: every request answered, Running within 10 s of the slice", func() {
		inNamespace("prestop", nil, func(ctx context.Context, ns string) {
			scenarioPausesUnderTraffic(ctx, ns, howItStops{preStop: 5 * time.Second})
		})
	})
})

// testbed is hack/testbed/cluster.sh, which hack/e2e.sh names.
func testbed() string {
	p := os.Getenv("NAPWAKE_E2E_TESTBED")
	if p == "" {
		Fail("NAPWAKE_E2E_TESTBED is not set: run the suite through hack/e2e.sh (make e2e)")
	}
	return p
}

// deployPaused deploys apps at once, waits until each is Running, then
// pauses them all and waits until each is Paused and routed.
func deployPaused(ctx context.Context, apps []framework.SampleApp) {
	for _, a := range apps {
		Expect(fw.Deploy(ctx, a)).To(Succeed())
	}
	for _, a := range apps {
		Eventually(func() napwakev1alpha1.Phase { return fw.Phase(ctx, a.Namespace, a.Name) }).
			WithTimeout(3*time.Minute).Should(Equal(napwakev1alpha1.PhaseRunning), a.Name)
		Eventually(func() (int32, error) { return fw.ReadyReplicas(ctx, a.Namespace, a.Name) }).Should(Equal(a.Replicas), a.Name)
	}
	for _, a := range apps {
		Expect(fw.RequestPause(ctx, a.Namespace, a.Name)).To(Succeed())
	}
	for _, a := range apps {
		expectPausedAndRouted(ctx, a.Namespace, a.Name, 3*time.Minute)
	}
}

// traffic is a client opening a new connection for each request: at a
// rate, or one after another, until stopped. Each answer with the wanted
// status counts as ok; anything else (a refusal, a reset, another status)
// as failed, its reason kept.
type traffic struct {
	want    int
	timeout time.Duration
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	ok      int
	why     map[string]int
	// first and last are when the first and the last failure ended.
	first, last time.Time
}

// startTraffic sends GET url (each of urls in turn) every `every`, each on
// its own connection, each waiting up to timeout for its answer; every 0
// sends the next once the last is answered.
func startTraffic(ctx context.Context, urls []string, every, timeout time.Duration, want int) *traffic {
	ctx, cancel := context.WithCancel(ctx)
	t := &traffic{want: want, timeout: timeout, cancel: cancel, why: map[string]int{}}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		var tick <-chan time.Time
		if every > 0 {
			tk := time.NewTicker(every)
			defer tk.Stop()
			tick = tk.C
		}
		for i := 0; ctx.Err() == nil; i++ {
			url := urls[i%len(urls)]
			if every == 0 {
				t.one(ctx, url)
				continue
			}
			t.wg.Add(1)
			go func() { defer t.wg.Done(); t.one(ctx, url) }()
			select {
			case <-ctx.Done():
			case <-tick:
			}
		}
	}()
	return t
}

func (t *traffic) one(ctx context.Context, url string) {
	r, err := framework.HTTPGet(context.WithoutCancel(ctx), url, map[string]string{"User-Agent": "e2e-traffic/1"}, t.timeout)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err != nil:
		t.why[shortErr(err)]++
	case r.Status != t.want:
		t.why[fmt.Sprintf("status %d", r.Status)]++
	default:
		t.ok++
		return
	}
	if t.first.IsZero() {
		t.first = time.Now()
	}
	t.last = time.Now()
}

// counts is how many were answered as wanted and how many failed so far,
// and why those failed.
func (t *traffic) counts() (ok, failed int, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var reasons []string
	for r, n := range t.why {
		failed += n
		reasons = append(reasons, fmt.Sprintf("%d× %s", n, r))
	}
	sort.Strings(reasons)
	if failed > 0 {
		reasons = append(reasons, "from "+t.first.Format("15:04:05.000")+" to "+t.last.Format("15:04:05.000"))
	}
	return t.ok, failed, strings.Join(reasons, "; ")
}

// stop stops sending, waits for every request sent to end, and returns the
// counts.
func (t *traffic) stop() (ok, failed int, why string) {
	t.cancel()
	t.wg.Wait()
	return t.counts()
}

// shortErr keeps what says why a request failed (refused, reset, EOF,
// timeout), not the URL around it.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}
