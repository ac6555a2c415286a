package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// Callers held at the same moment share one wake: however many arrive
// while the first one's patch is under way, the workload is stamped once.
func TestCallersHeldAtOnceStampOneWake(t *testing.T) {
	const callers = 20
	h := newHarness(t, testConfig(), testWorkload())
	gate := gateWakes(h)
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

// Page loads during an API-server outage share one retrier: 20,000 of them
// for one workload while every wake patch fails start exactly one retry
// loop, which each load extends (it outlives answeredFor counted from the
// first load) and which ends answeredFor after the last; the patches go
// at the retrier's pace, not the loads', and the goroutines stay bounded.
func TestPageLoadsDuringAnOutageShareOneRetrier(t *testing.T) {
	const loads, browsers = 20000, 16
	cfg := testConfig()
	cfg.WakeRetry = 200 * time.Millisecond
	// The production silence: under the race detector on busy cores a
	// page load's goroutine can first read after testConfig's 150 ms.
	cfg.Silence = 3 * time.Second
	h := newHarness(t, cfg, testWorkload())
	k := h.srv.waker
	k.mu.Lock()
	k.answeredFor = time.Second
	k.mu.Unlock()
	h.rec.mu.Lock()
	h.rec.wakeErr = errors.New("the API server is away")
	h.rec.mu.Unlock()
	retriers := func() (live, started int) { k.mu.Lock(); defer k.mu.Unlock(); return len(k.retriers), k.started }
	baseline := runtime.NumGoroutine()

	start := time.Now()
	var (
		next         atomic.Int64
		maxGoroutine atomic.Int64
		bad          atomic.Value
		wg           sync.WaitGroup
	)
	for range browsers {
		wg.Go(func() {
			for next.Add(1) <= loads {
				c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.port)))
				if err != nil {
					bad.CompareAndSwap(nil, err.Error())
					return
				}
				_, _ = c.Write([]byte(chromeNav))
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				got, err := io.ReadAll(c)
				_ = c.Close()
				if err != nil || !bytes.HasPrefix(got, []byte("HTTP/1.1 503 ")) || !bytes.Contains(got, []byte("waking up")) {
					bad.CompareAndSwap(nil, fmt.Sprintf("%v: %.80q", err, got))
					return
				}
				if n := int64(runtime.NumGoroutine()); n > maxGoroutine.Load() {
					maxGoroutine.Store(n)
				}
			}
		})
	}
	wg.Wait()
	lastLoad := time.Now()
	if v := bad.Load(); v != nil {
		t.Fatalf("a page load did not get the waking-up page: %v", v)
	}
	if g := maxGoroutine.Load(); g > int64(baseline+4*browsers+50) {
		t.Errorf("%d goroutines during the page loads (%d before them); want them bounded, not one per load", g, baseline)
	}
	live, started := retriers()
	if started != 1 || live != 1 {
		t.Fatalf("%d retriers started, %d live after %d page loads over %v; want exactly one, still running", started, live, loads, lastLoad.Sub(start).Round(time.Millisecond))
	}
	wait(t, "the retrier to end once its time after the last load is over", func() bool { live, _ := retriers(); return live == 0 })
	if d := time.Since(lastLoad); d < time.Second-cfg.WakeRetry {
		t.Errorf("the retrier ended %v after the last page load; want answeredFor (1 s) after it", d)
	}
	h.rec.mu.Lock()
	attempts := h.rec.attempts
	h.rec.mu.Unlock()
	if most := int(time.Since(start)/cfg.WakeRetry) + 3; attempts > most {
		t.Errorf("%d wake patches in %v; want at most %d, one per WakeRetry", attempts, time.Since(start).Round(time.Millisecond), most)
	}
	t.Logf("%d page loads in %v: %d patches, at most %d goroutines (%d before)", loads, lastLoad.Sub(start).Round(time.Millisecond), attempts, maxGoroutine.Load(), baseline)
}

// A caller passed on while its wake's patch is under way does not cancel
// the patch: its request came during the pause and calls it off. (With
// the patch canceled with its caller, each caller held between the route
// and the scale to 0 began a stamp that the pass to the still-Ready pod
// canceled, and none landed.)
func TestAPatchUnderWayOutlivesItsCallersPass(t *testing.T) {
	h := newHarness(t, testConfig(), testWorkload())
	gate := gateWakes(h)
	c := h.dial()
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: api\r\n\r\n"))
	wait(t, "the wake's patch under way", func() bool { h.rec.mu.Lock(); defer h.rec.mu.Unlock(); return h.rec.entered == 1 })
	b := newBackend(t)
	h.ready(b)
	wait(t, "the caller passed on", func() bool { return h.held() == 0 })
	_ = c.Close() // and gone, its pass ended, as an HTTP/1.0 caller's is
	wait(t, "the pass ended", func() bool { return testutil.ToFloat64(h.m.Passing) == 0 })
	close(gate)
	wait(t, "the patch landed", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
}

// gateWakes holds every wake's patch until the returned channel closes.
func gateWakes(h *harness) chan struct{} {
	gate := make(chan struct{})
	h.rec.mu.Lock()
	h.rec.wakeGate = gate
	h.rec.mu.Unlock()
	return gate
}
