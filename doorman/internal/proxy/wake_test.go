package proxy

import (
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// Callers held at the same moment share one wake: however many arrive
// while the first one's patch is under way, the workload is stamped once.
func TestCallersHeldAtOnceStampOneWake(t *testing.T) {
	const callers = 20
	cfg := testConfig()
	h := newHarness(t, cfg, testWorkload())
	gate := make(chan struct{})
	h.rec.mu.Lock()
	h.rec.wakeGate = gate
	h.rec.mu.Unlock()
	for range callers {
		_, _ = h.dial().Write([]byte("GET / HTTP/1.1\r\nHost: api\r\n\r\n"))
	}
	wait(t, "every caller held", func() bool { return h.held() == callers })
	close(gate)
	wait(t, "the wake stamped", func() bool { n, _, _ := h.rec.counts(); return n >= 1 })
	wakeLoopsSettled(t, h)
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	if h.rec.attempts != 1 || len(h.rec.wakes) != 1 {
		t.Fatalf("%d patches (%d stamped) for %d callers held at once, want 1", h.rec.attempts, len(h.rec.wakes), callers)
	}
}

// wakeLoopsSettled waits until no caller's wake claim is in flight.
func wakeLoopsSettled(t *testing.T, h *harness) {
	t.Helper()
	wait(t, "no wake in flight", func() bool {
		k := h.srv.waker
		k.mu.Lock()
		defer k.mu.Unlock()
		for _, w := range k.lastWake {
			if w.inFlight {
				return false
			}
		}
		return true
	})
}

// While the API server refuses the wake, it is retried for as long as a
// caller waits, even after the caller whose attempt failed has left, and
// a failed attempt gives its source's allowance back: after the outage
// the wake goes at once, though the source's burst is one.
func TestAWakeTheAPIServerRefusedIsRetriedForTheCallersStillWaiting(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.SourceBurst = 1
	cfg.Limits.SourceEvery = time.Hour
	w := testWorkload()
	w.MaxWait = time.Minute
	h := newHarness(t, cfg, w)
	h.rec.mu.Lock()
	h.rec.wakeErr = errors.New("the API server is away")
	h.rec.mu.Unlock()
	first := h.dial()
	_, _ = first.Write([]byte("GET /first HTTP/1.1\r\nHost: api\r\n\r\n"))
	wait(t, "a failed attempt", func() bool { h.rec.mu.Lock(); defer h.rec.mu.Unlock(); return h.rec.attempts >= 1 })
	second := h.dial()
	_, _ = second.Write([]byte("GET /second HTTP/1.1\r\nHost: api\r\n\r\n"))
	wait(t, "both held", func() bool { return h.held() == 2 })
	_ = first.Close() // the caller whose attempt failed gives up
	wait(t, "the first caller gone", func() bool { return h.held() == 1 })
	h.rec.mu.Lock()
	failedSoFar := h.rec.attempts
	h.rec.wakeErr = nil // the API server is back
	h.rec.mu.Unlock()
	wait(t, "the wake stamped once the API server is back", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
	if r := h.rejections(CapWakePerSource); r != 0 {
		t.Fatalf("%v wakes refused per source after %d failed attempts; want none (failed attempts give the allowance back)", r, failedSoFar)
	}
	if n, _, _ := h.rec.counts(); n != 1 {
		t.Fatalf("%d wakes stamped, want 1", n)
	}
}

// A browser shown the waking-up page has left, but the wake it asked for
// goes on being retried while the API server refuses it, not tried once.
func TestABrowsersWakeIsRetriedAfterItsPageWasAnswered(t *testing.T) {
	h := newHarness(t, testConfig(), testWorkload())
	h.rec.mu.Lock()
	h.rec.wakeErr = errors.New("the API server is away")
	h.rec.mu.Unlock()
	c := h.dial()
	_, _ = c.Write([]byte(chromeNav))
	readAll(t, c) // the waking-up page; the connection is closed
	wait(t, "a few failed attempts", func() bool { h.rec.mu.Lock(); defer h.rec.mu.Unlock(); return h.rec.attempts >= 3 })
	h.rec.mu.Lock()
	h.rec.wakeErr = nil
	h.rec.mu.Unlock()
	wait(t, "the wake stamped once the API server is back", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
}

// A connection passing through to a workload is its activity: every
// ActivityEvery while it passes the workload is reported active, and not
// once it has ended.
func TestConnectionsPassingThroughAreReportedAsActivity(t *testing.T) {
	cfg := testConfig()
	fc := clocktesting.NewFakeClock(time.Now())
	cfg.Clock = fc
	h, b, c := echoPassing(t, cfg, "Running") // a route lingering after the wake
	wait(t, "the connection passing", func() bool { return b.accepted() == 1 })
	active := func() int { h.rec.mu.Lock(); defer h.rec.mu.Unlock(); return len(h.rec.active) }
	wait(t, "the reporter's and the housekeeping's tickers", func() bool { return fc.Waiters() == 2 })
	fc.Step(ActivityEvery)
	wait(t, "the workload reported active", func() bool { return active() == 1 })
	_ = c.Close()
	wait(t, "the connection ended", func() bool { return len(h.srv.activity.busy()) == 0 })
	fc.Step(ActivityEvery)
	fc.Step(ActivityEvery)
	if n := active(); n != 1 {
		t.Fatalf("reported active %d times, want once: nothing passes after the first tick", n)
	}
}
