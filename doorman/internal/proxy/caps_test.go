package proxy

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/shared/onewake"
	"napwake.dev/shared/testnet"
)

func TestDefaultLimitsAreTheDocumentedOnes(t *testing.T) {
	want := Limits{
		Held: 2048, HeldPerWorkload: 256, HeldPerSource: 1024, HeldPerSourceWorkload: 128,
		Passing: 1024, PassingPerSource: 512,
		SourceBurst: 30, SourceEvery: 2 * time.Second, OverallBurst: 200, OverallPerSecond: 10,
		FreeBytes: 8192, ConnBytes: 1 << 20, TotalBytes: 32 << 20,
	}
	if got := DefaultLimits(); got != want {
		t.Fatalf("DefaultLimits() = %+v, want %+v", got, want)
	}
	cfg := Config{}
	cfg.defaults()
	if cfg.Silence != 3*time.Second || cfg.DialRetry != time.Second || cfg.WakeRetry != 2*time.Second ||
		cfg.IdleTimeout != 10*time.Minute || cfg.Drain != 5*time.Minute || cfg.Linger != 30*time.Second || cfg.Limits != want {
		t.Fatalf("defaults: %+v", cfg)
	}
}

// addRoute adds a second workload's route to the harness' server.
func (h *harness) addRoute(name string) Route { return h.addRoutes(name)[0] }

// addRoutes serves the harness' route and one more for each name, each a
// workload of that name in the harness workload's namespace, with a
// Service of that name.
func (h *harness) addRoutes(names ...string) []Route {
	h.t.Helper()
	var rs []Route
	for _, name := range names {
		w := h.route.Workload
		w.Name = name
		rs = append(rs, h.newRoute(w, name, "http"))
	}
	h.serve(rs...)
	return rs
}

// newRoute is a route to w through its Service's port portName, on a
// doorman port no other route of the harness has (a port free a moment
// ago may come up twice).
func (h *harness) newRoute(w Workload, service, portName string) Route {
	h.t.Helper()
	if h.ports == nil {
		h.ports = map[int]bool{h.port: true}
	}
	port := testnet.FreePort(h.t)
	for h.ports[port] {
		port = testnet.FreePort(h.t)
	}
	h.ports[port] = true
	return Route{DoormanPort: port, Service: service, PortName: portName, Port: 80, Workload: w}
}

// serve serves the harness' route and rs.
func (h *harness) serve(rs ...Route) {
	h.t.Helper()
	if failed := h.srv.SetRoutes(append([]Route{h.route}, rs...)); len(failed) > 0 {
		h.t.Fatal(failed)
	}
}

func (h *harness) dialPort(port int, src string) *net.TCPConn {
	old := h.port
	h.port = port
	defer func() { h.port = old }()
	return h.dialFrom(src)
}

func TestHeldCapsCloseAtOnceOverTheCap(t *testing.T) {
	const n = 3
	cases := []struct {
		name  string
		set   func(*Limits)
		cap   string
		other func(h *harness, web Route) *net.TCPConn // not over the cap
		over  func(h *harness, web Route) *net.TCPConn
	}{
		{"per doorman pod", func(l *Limits) { l.Held = n }, CapHeld, nil,
			func(h *harness, web Route) *net.TCPConn { return h.dialPort(web.DoormanPort, "127.0.0.2") }},
		{"per workload", func(l *Limits) { l.HeldPerWorkload = n }, CapHeldPerWorkload,
			func(h *harness, web Route) *net.TCPConn { return h.dialPort(web.DoormanPort, "127.0.0.1") },
			func(h *harness, web Route) *net.TCPConn { return h.dialFrom("127.0.0.2") }},
		{"per source", func(l *Limits) { l.HeldPerSource = n }, CapHeldPerSource,
			func(h *harness, web Route) *net.TCPConn { return h.dialFrom("127.0.0.2") },
			func(h *harness, web Route) *net.TCPConn { return h.dialPort(web.DoormanPort, "127.0.0.1") }},
		{"per source for one workload", func(l *Limits) { l.HeldPerSourceWorkload = n }, CapHeldPerSourceWorkload,
			func(h *harness, web Route) *net.TCPConn { return h.dialPort(web.DoormanPort, "127.0.0.1") },
			func(h *harness, web Route) *net.TCPConn { return h.dialFrom("127.0.0.1") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.set(&cfg.Limits)
			h := newHarness(t, cfg, testWorkload())
			web := h.addRoute("web")
			for i := 1; i <= n; i++ { // cap-1, then cap: held
				c := h.dial()
				_, _ = c.Write([]byte("x"))
				wait(t, "held", func() bool { return h.held() == float64(i) })
			}
			if tc.other != nil {
				c := tc.other(h, web)
				_, _ = c.Write([]byte("x"))
				wait(t, "another connection held beside the full cap", func() bool { return h.held() == n+1 })
				if closedAtOnce(c) {
					t.Fatal("a connection under its own caps was closed")
				}
			}
			c := tc.over(h, web) // cap+1
			if c != nil && !closedAtOnce(c) {
				t.Fatal("the connection over the cap was not closed at once")
			}
			if got := h.rejections(tc.cap); got != 1 {
				t.Fatalf("rejections{cap=%s} = %v, want 1", tc.cap, got)
			}
			// A closed connection counts as turned away, once.
			if _, turned, _ := h.rec.counts(); turned != 1 {
				t.Fatalf("turned away %d, want the one closed over the cap", turned)
			}
			if got := h.wakes(metrics.ResultTurnedAway); got != 1 {
				t.Fatalf("wakes{result=turned_away} = %v, want 1", got)
			}
		})
	}
}

func TestPassingCapsHoldUntilAPlaceFrees(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Limits)
	}{
		{"per doorman pod", func(l *Limits) { l.Passing = 2 }},
		{"per source", func(l *Limits) { l.PassingPerSource = 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.set(&cfg.Limits)
			h := newHarness(t, cfg, testWorkload())
			b := newBackend(t)
			h.ready(b)
			var first *net.TCPConn
			for i := 1; i <= 2; i++ { // cap-1, cap: passed
				c := h.dial()
				if first == nil {
					first = c
				}
				_, _ = c.Write([]byte("x"))
				wait(t, "passed", func() bool { return b.accepted() == i })
			}
			c := h.dial() // cap+1: held
			_, _ = c.Write([]byte("third"))
			wait(t, "the third held", func() bool { return h.held() == 1 })
			if b.accepted() != 2 {
				t.Fatal("a connection over the passing cap was passed")
			}
			_ = first.Close()
			wait(t, "the third passed once a place freed", func() bool { return string(b.received(2)) == "third" })
		})
	}
}

func TestPassingPerSourceLeavesOtherSourcesAlone(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.PassingPerSource = 1
	h := newHarness(t, cfg, testWorkload())
	b := newBackend(t)
	h.ready(b)
	_, _ = h.dialFrom("127.0.0.1").Write([]byte("a"))
	wait(t, "first", func() bool { return b.accepted() == 1 })
	_, _ = h.dialFrom("127.0.0.2").Write([]byte("b"))
	wait(t, "other source passed", func() bool { return b.accepted() == 2 })
}

func TestWakeRateLimits(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	l := newWakeLimiter(DefaultLimits(), fc)
	take := func(src netip.Addr) (func(), string) { return l.take(src) }
	a := netip.MustParseAddr("10.0.0.1")
	for i := 1; i <= 30; i++ { // burst of 30: 29 (cap-1) and 30 (cap) allowed
		if give, cap := take(a); give == nil {
			t.Fatalf("wake %d from one source refused by %s, want the burst of 30 allowed", i, cap)
		}
	}
	if give, cap := take(a); give != nil || cap != CapWakePerSource { // cap+1
		t.Fatalf("wake 31 from one source: %v %q, want refused per source", give != nil, cap)
	}
	fc.Step(1900 * time.Millisecond)
	if give, _ := take(a); give != nil {
		t.Fatal("a wake within 2 s of the burst was allowed")
	}
	fc.Step(100 * time.Millisecond)
	refund, _ := take(a)
	if refund == nil {
		t.Fatal("a wake 2 s after the burst was refused")
	}
	// A wake the API server refused gives its token back: the next goes.
	refund()
	if give, _ := take(a); give == nil {
		t.Fatal("a wake after a refunded one was refused")
	}

	fc.Step(time.Minute)                    // refill everything
	l = newWakeLimiter(DefaultLimits(), fc) // take uses the new one
	for i := 0; i < 200; i++ {
		src := netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})
		if give, cap := take(src); give == nil {
			t.Fatalf("overall wake %d refused by %s, want a burst of 200", i+1, cap)
		}
	}
	b := netip.MustParseAddr("10.2.0.1")
	if give, cap := take(b); give != nil || cap != CapWakeOverall {
		t.Fatalf("wake 201 overall: %v %q, want refused overall", give != nil, cap)
	}
	if got := l.sources[b].tokensAt(fc.Now()); got != 30 {
		t.Fatalf("a wake refused overall used its source's allowance: %v tokens left, want 30", got)
	}
	fc.Step(100 * time.Millisecond) // 10 a second
	if give, _ := take(b); give == nil {
		t.Fatal("a wake 100 ms later was refused overall")
	}
}

func TestARefusedWakeIsRetriedEveryTwoSeconds(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.SourceBurst = 1
	cfg.Limits.SourceEvery = time.Hour
	cfg.WakeRetry = 2 * time.Second
	fc := clocktesting.NewFakeClock(time.Now())
	cfg.Clock = fc
	w := testWorkload()
	w.MaxWait = time.Minute
	h := newHarness(t, cfg, w)
	if refund, _ := h.srv.waker.take(netip.MustParseAddr("127.0.0.1")); refund == nil {
		t.Fatal("setup: the only wake of the hour was refused")
	}
	c := h.dial()
	_, _ = c.Write([]byte("x"))
	wait(t, "the refused wake", func() bool { return h.rejections(CapWakePerSource) == 1 })
	// The injected clock's timers: the activity reporter's and the
	// housekeeping's tickers, and the wake retry.
	wait(t, "the retry timer", func() bool { return fc.Waiters() == 3 })
	h.srv.waker.mu.Lock()
	h.srv.waker.limiter.sources[netip.MustParseAddr("127.0.0.1")] = newBucket(1, time.Hour, fc.Now())
	h.srv.waker.mu.Unlock()
	if n, _, _ := h.rec.counts(); n != 0 {
		t.Fatal("woke before the retry")
	}
	fc.Step(1900 * time.Millisecond)
	if n, _, _ := h.rec.counts(); n != 0 {
		t.Fatal("retried before 2 s")
	}
	fc.Step(100 * time.Millisecond)
	wait(t, "the retried wake", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
}

// Wakes in flight at once count against the rate limits as they go: with
// every patch slow to return, callers of many paused workloads from one
// source whose burst is one wake an hour wake one workload, and 300
// workloads touched from 300 sources wake the overall burst's worth (200),
// the rest refused by the limit that names them.
func TestConcurrentWakesCountAgainstTheRateLimitsAsTheyGo(t *testing.T) {
	for _, tc := range []struct {
		name       string
		workloads  int
		oneSource  bool
		set        func(*Limits)
		want       int
		refusedCap string
	}{
		{"ten workloads from one source", 10, true, func(l *Limits) { l.SourceBurst, l.SourceEvery = 1, time.Hour }, 1, CapWakePerSource},
		{"300 workloads from 300 sources", 300, false, func(*Limits) {}, DefaultLimits().OverallBurst, CapWakeOverall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.set(&cfg.Limits)
			cfg.Clock = clocktesting.NewFakeClock(time.Now()) // no refill while the patches are out
			gate := make(chan struct{})
			h := newHarnessRec(t, cfg, testWorkload(), &recorder{lastClick: &clickStore{}, wakeGate: gate})
			names := make([]string, tc.workloads-1)
			for i := range names {
				names[i] = "w" + strconv.Itoa(i)
			}
			routes := append([]Route{h.route}, h.addRoutes(names...)...)
			for i, r := range routes {
				src := "127.0.0.1"
				if !tc.oneSource {
					src = netip.AddrFrom4([4]byte{127, 1, byte(i >> 8), byte(i)}).String()
				}
				_, _ = h.dialPort(r.DoormanPort, src).Write([]byte("x"))
			}
			entered := func() int { h.rec.mu.Lock(); defer h.rec.mu.Unlock(); return h.rec.entered }
			wait(t, "every caller's wake patched or refused", func() bool {
				return entered()+int(h.rejections(tc.refusedCap)) == tc.workloads
			})
			close(gate)
			wait(t, "the patches to return", func() bool { n, _, _ := h.rec.counts(); return n == entered() })
			if n, _, _ := h.rec.counts(); n != tc.want {
				t.Fatalf("%d workloads woken at once, want %d (the burst)", n, tc.want)
			}
			if got := h.rejections(tc.refusedCap); got != float64(tc.workloads-tc.want) {
				t.Fatalf("rejections{cap=%s} = %v, want %d", tc.refusedCap, got, tc.workloads-tc.want)
			}
		})
	}
}

var _ clock.WithTickerAndDelayedExecution = (*clocktesting.FakeClock)(nil)

// Once this doorman has woken a pause, later callers in it do not patch
// again while the phase it sees still says Paused, for WakeStands: one
// WokenByRequest per pause. A pause still Paused after that contradicts the
// memo and is stamped again; a new pause wakes again.
func TestAPauseIsWokenOncePerDoorman(t *testing.T) {
	cfg, fc, w := pausedOnFakeClock(time.Hour)
	h := newHarness(t, cfg, w)
	src := netip.MustParseAddr("127.0.0.1")
	// One round of a caller's wake each (until is within the retry), the
	// workload as the doorman's routes say it is now.
	wake := func(w Workload) {
		r := h.route
		r.Workload = w
		if failed := h.srv.SetRoutes([]Route{r}); len(failed) > 0 {
			t.Fatalf("SetRoutes: %v", failed)
		}
		h.srv.waker.wake(context.Background(), r, src, fc.Now().Add(time.Second))
	}
	wake(w)
	fc.Step(3 * time.Second) // past the 2 s retry: another caller, the phase not yet Resuming here
	wake(w)
	fc.Step(onewake.WakeStands - 4*time.Second)
	wake(w)
	if n, _, _ := h.rec.counts(); n != 1 {
		t.Fatalf("%d wakes for one pause within %v, want 1", n, onewake.WakeStands)
	}
	fc.Step(time.Second) // still Paused onewake.WakeStands after the stamp: stamped again
	wake(w)
	if n, _, _ := h.rec.counts(); n != 2 {
		t.Fatalf("%d wakes once the phase contradicted the stamp for %v, want 2", n, onewake.WakeStands)
	}
	fc.Step(3 * time.Second)
	next := w
	next.PausedAt = fc.Now() // woke, ran, paused again
	wake(next)
	if n, _, _ := h.rec.counts(); n != 3 {
		t.Fatalf("%d wakes after a new pause, want 3", n)
	}
}

// TestACallerHeldAloneStampsAgainWhileThePauseStands: a caller held alone
// whose wake stamp did not wake the workload (the operator read it as
// before the pause, or the doorman stamped from a stale view) stamps the
// pause again once WakeStands has passed with the workload still Paused,
// instead of waiting out its maxWait (the e2e's looping client lost a
// request to that); once the workload is no longer paused it stops.
func TestACallerHeldAloneStampsAgainWhileThePauseStands(t *testing.T) {
	cfg, fc, w := pausedOnFakeClock(time.Minute)
	w.MaxWait = 10 * time.Minute
	h := newHarness(t, cfg, w)
	c := h.dial()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: api\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	wakes := func() int { n, _, _ := h.rec.counts(); return n }
	wait(t, "the first stamp", func() bool { return wakes() == 1 })
	// Step through WakeStands a retry at a time: each round looks again.
	for range onewake.WakeStands / cfg.WakeRetry {
		if wakes() != 1 {
			t.Fatalf("%d stamps within onewake.WakeStands of the first, want 1", wakes())
		}
		wait(t, "the caller's retry timer", func() bool { return fc.Waiters() == 3 })
		fc.Step(cfg.WakeRetry)
	}
	wait(t, "the pause stamped again by the caller held alone", func() bool { return wakes() == 2 })

	resuming := h.route
	resuming.Workload.Phase = "Resuming"
	if failed := h.srv.SetRoutes([]Route{resuming}); len(failed) > 0 {
		t.Fatalf("SetRoutes: %v", failed)
	}
	fc.Step(cfg.WakeRetry) // the loop's next round sees it
	wait(t, "the caller's wake loop to end", func() bool { return fc.Waiters() == 2 })
	fc.Step(2 * onewake.WakeStands)
	if n := wakes(); n != 2 {
		t.Fatalf("%d stamps after the workload was Resuming, want 2", n)
	}
	_ = c.Close()
}

// pausedOnFakeClock is the wake tests' set-up: the production WakeRetry
// (2 s) on an injected clock, and the test workload paused for ago.
func pausedOnFakeClock(ago time.Duration) (Config, *clocktesting.FakeClock, Workload) {
	cfg := testConfig()
	cfg.WakeRetry = 2 * time.Second
	fc := clocktesting.NewFakeClock(time.Now())
	cfg.Clock = fc
	w := testWorkload()
	w.PausedAt = fc.Now().Add(-ago)
	return cfg, fc, w
}
