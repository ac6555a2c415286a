package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/doorman/internal/page"
	"napwake.dev/shared/testnet"
)

const chromeNav = "GET /pr/42 HTTP/1.1\r\nHost: pr-412.preview.example.dev\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Chrome/130.0\r\nSec-Fetch-Mode: navigate\r\n\r\n"

// copyModes are both ways a passed-on connection can be copied (--copy).
var copyModes = []CopyMode{CopySplice, CopyPlain}

func TestAHeldRequestWakesAndIsPassedOnByteExact(t *testing.T) {
	for _, mode := range copyModes {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := testConfig()
			cfg.Copy = mode
			heldRequestPassedOn(t, cfg)
		})
	}
}

func heldRequestPassedOn(t *testing.T, cfg Config) {
	t.Helper()
	h := newHarness(t, cfg, testWorkload())
	b := newBackend(t)
	b.set(nil, true)
	c := h.dial()
	req := "POST /api HTTP/1.1\r\nHost: api\r\nContent-Length: 5\r\n\r\nhello"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	wait(t, "the wake", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
	if got := h.rec.firstWake(); got != "preview-42/api api 127.0.0.1" {
		t.Fatalf("wake %q, want the workload, the Service and the caller", got)
	}
	if b.accepted() != 0 {
		t.Fatal("the pod was dialled before it was Ready")
	}
	h.ready(b)
	wait(t, "the replay", func() bool { return string(b.received(0)) == req })
	_ = c.CloseWrite()
	if got := string(readAll(t, c)); got != req+"bye" {
		t.Fatalf("caller got %q, want the echo and the pod's answer after half-close", got)
	}
	wait(t, "the woken count", func() bool { return h.wakes(metrics.ResultWoken) == 1 })
	if h.held() != 0 {
		t.Fatalf("held gauge %v after passing", h.held())
	}
}

func TestAConnectionWithAReadyPodGoesStraightThereWakingNothing(t *testing.T) {
	h := newHarness(t, testConfig(), testWorkload())
	b := newBackend(t)
	b.set([]byte("220 ready\r\n"), false)
	h.ready(b)
	c := h.dial()
	got := make([]byte, 11)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "220 ready\r\n" {
		t.Fatalf("got %q %v, want the pod's greeting at once", got, err)
	}
	if n, _, _ := h.rec.counts(); n != 0 {
		t.Fatalf("%d wakes, want none", n)
	}
	wait(t, "the passed count", func() bool { return h.wakes(metrics.ResultPassed) == 1 })
}

// pausing serves a workload that is pausing with a Ready pod, and dials it.
func pausing(t *testing.T) (*harness, *backend, *net.TCPConn) {
	t.Helper()
	w := testWorkload()
	w.Phase = "Pausing"
	h := newHarness(t, testConfig(), w)
	b := newBackend(t)
	h.ready(b)
	return h, b, h.dial()
}

func TestWhileItPausesAConnectionPassedOnCallsThePauseOff(t *testing.T) {
	h, b, c := pausing(t)
	_, _ = c.Write([]byte("x"))
	wait(t, "the pod", func() bool { return string(b.received(0)) == "x" })
	wait(t, "the wake that calls the pause off", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
}

func TestWhileItPausesAConnectAndCloseWakesNothing(t *testing.T) {
	// The operator checks each doorman port by connecting and closing:
	// that must never call the pause it is making off.
	h, _, c := pausing(t)
	_ = c.Close()
	wait(t, "the connection to go", func() bool { return h.held() == 0 })
	time.Sleep(2 * testConfig().Silence) // assert nothing happens after the silence deadline
	if n, _, _ := h.rec.counts(); n != 0 {
		t.Fatalf("%d wakes from a connect-and-close while pausing, want none", n)
	}
}

func TestWhileItPausesAKnownProbeIsPassedOnWithoutWaking(t *testing.T) {
	h, b, c := pausing(t)
	req := "GET /healthz HTTP/1.1\r\nHost: x\r\nUser-Agent: kube-probe/1.37\r\n\r\n"
	_, _ = c.Write([]byte(req))
	wait(t, "the pod to get the probe", func() bool { return string(b.received(0)) == req })
	if n, _, _ := h.rec.counts(); n != 0 {
		t.Fatalf("%d wakes from a probe while pausing, want none", n)
	}
}

func TestSilenceForThreeSecondsIsTakenForServerSpeaksFirst(t *testing.T) {
	h := newHarness(t, testConfig(), testWorkload())
	b := newBackend(t)
	greet := []byte("J\x00\x00\x00\x0a8.0.36")
	b.set(greet, false)
	c := h.dial()
	wait(t, "the wake after silence", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
	h.ready(b)
	got := make([]byte, len(greet))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, greet) {
		t.Fatalf("got %q %v, want the server's greeting", got, err)
	}
	if len(b.received(0)) != 0 {
		t.Fatalf("the pod got %q, want nothing", b.received(0))
	}
}

func TestConnectAndCloseIsClosedAndWakesNothing(t *testing.T) {
	h := newHarness(t, testConfig(), testWorkload())
	c := h.dial()
	_ = c.Close()
	wait(t, "the held connection to go", func() bool { return h.held() == 0 })
	time.Sleep(3 * testConfig().Silence) // assert nothing happens after the silence deadline
	if n, ta, _ := h.rec.counts(); n != 0 || ta != 0 {
		t.Fatalf("wakes %d turned away %d, want none", n, ta)
	}
}

func TestACallerThatLeavesIsNeverPassedOn(t *testing.T) {
	for _, how := range []string{"close", "half-close", "reset"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, testConfig(), testWorkload())
			b := newBackend(t)
			c := h.dial()
			_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			wait(t, "the wake", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
			switch how {
			case "close":
				_ = c.Close()
			case "half-close":
				_ = c.CloseWrite()
			case "reset":
				_ = c.SetLinger(0)
				_ = c.Close()
			}
			wait(t, "the held connection to go", func() bool { return h.held() == 0 })
			h.ready(b)
			time.Sleep(100 * time.Millisecond) // give a wrong pass the chance to happen
			if b.accepted() != 0 {
				t.Fatal("a caller that left was passed on")
			}
		})
	}
}

// TestWhatWakesAWorkload is the "What wakes a workload, and what doesn't"
// table, over a real socket, with the exact answer bytes.
func TestWhatWakesAWorkload(t *testing.T) {
	cases := []struct {
		name       string
		req        string
		answer     []byte // nil: held
		wakes      bool
		turnedAway int
	}{
		{"a known probe gets 503 and wakes nothing", "GET /healthz HTTP/1.1\r\nUser-Agent: kube-probe/1.30\r\n\r\n", page.Probe(false), false, 0},
		{"HEAD from a known monitor gets 503 without a body", "HEAD / HTTP/1.1\r\nUser-Agent: Uptime-Kuma/1.23\r\n\r\n", page.Probe(true), false, 0},
		{"GoogleHC gets 200 and wakes nothing", "GET / HTTP/1.1\r\nUser-Agent: GoogleHC/1.0\r\n\r\n", page.GoogleHC(false), false, 0},
		{"a user-added prefix gets 503", "GET / HTTP/1.1\r\nUser-Agent: MyCorpMonitor/3.1\r\n\r\n", page.Probe(false), false, 0},
		{"a hidden file gets 404, counted as turned away", "GET /.git/config HTTP/1.1\r\nUser-Agent: curl/8\r\n\r\n", page.NotFound(false), false, 1},
		{"a POST from a known agent is held and wakes", "POST /api/v1/write HTTP/1.1\r\nUser-Agent: Prometheus/2.53\r\nContent-Length: 0\r\n\r\n", nil, true, 0},
		{"a TLS handshake is held and wakes", "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", nil, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.ExtraAgents = []string{"MyCorpMonitor/"}
			h := newHarness(t, cfg, testWorkload())
			c := h.dial()
			_, _ = c.Write([]byte(tc.req))
			if tc.answer != nil {
				if got := readAll(t, c); !bytes.Equal(got, tc.answer) {
					t.Fatalf("got %q, want %q", got, tc.answer)
				}
			} else {
				wait(t, "the wake", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
				if h.held() != 1 {
					t.Fatalf("held gauge %v, want 1", h.held())
				}
			}
			wakes, ta, _ := h.rec.counts()
			if (wakes > 0) != tc.wakes || ta != tc.turnedAway {
				t.Fatalf("wakes %d turned away %d, want wakes=%v turned away %d", wakes, ta, tc.wakes, tc.turnedAway)
			}
		})
	}
}

func TestCheckersPassThroughOnceAPodIsReady(t *testing.T) {
	h := newHarness(t, testConfig(), testWorkload())
	b := newBackend(t)
	h.ready(b)
	c := h.dial()
	probe := "GET /healthz HTTP/1.1\r\nUser-Agent: kube-probe/1.30\r\n\r\n"
	_, _ = c.Write([]byte(probe))
	wait(t, "the probe at the pod", func() bool { return string(b.received(0)) == probe })
}

func TestABrowserGetsTheWakingUpPageAndWakes(t *testing.T) {
	w := testWorkload()
	w.Phase = "Paused"
	h := newHarness(t, testConfig(), w)
	c := h.dial()
	_, _ = c.Write([]byte(chromeNav))
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(readAll(t, c))), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "3" || resp.Header.Get("Cache-Control") != "no-store" ||
		resp.Header.Get("X-Robots-Tag") != "noindex" || resp.Header.Get("Content-Security-Policy") != page.CSP {
		t.Fatalf("got %d %v", resp.StatusCode, resp.Header)
	}
	if !strings.Contains(string(body), "pr-412.preview.example.dev/pr/42") || strings.Contains(string(body), "preview-42") {
		t.Fatalf("page must show the address and name no namespace: %s", body)
	}
	wait(t, "the wake", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
}

func TestWithPageOffABrowserIsHeld(t *testing.T) {
	w := testWorkload()
	w.Page = false
	browserIsHeld(t, newHarness(t, testConfig(), w), 1)
}

// browserIsHeld: a browser's navigation is held, not answered with the
// page: it makes wakes wakes, and reaches the pod once one is Ready.
func browserIsHeld(t *testing.T, h *harness, wakes int) {
	t.Helper()
	b := newBackend(t)
	c := h.dial()
	_, _ = c.Write([]byte(chromeNav))
	wait(t, "the wakes", func() bool { n, _, _ := h.rec.counts(); return n == wakes })
	h.ready(b)
	wait(t, "the browser's request at the pod", func() bool { return string(b.received(0)) == chromeNav })
}

func TestAskModeTurnsAwayWithoutWaking(t *testing.T) {
	w := testWorkload()
	w.Ask = true
	h := newHarness(t, testConfig(), w)
	c := h.dial()
	_, _ = c.Write([]byte("GET /api HTTP/1.1\r\nHost: x\r\n\r\n"))
	if got := readAll(t, c); !bytes.Equal(got, page.Asleep(false, false)) {
		t.Fatalf("got %q", got)
	}
	c2 := h.dial()
	_, _ = c2.Write([]byte("\x16\x03\x01\x00"))
	if got := readAll(t, c2); len(got) != 0 {
		t.Fatalf("TLS in Ask mode got %q, want nothing", got)
	}
	wait(t, "two turned away", func() bool { _, ta, _ := h.rec.counts(); return ta == 2 })
	if n, _, _ := h.rec.counts(); n != 0 {
		t.Fatalf("%d wakes in Ask mode", n)
	}
}

func TestHeldPastMaxWaitIsClosedAndReported(t *testing.T) {
	w := testWorkload()
	w.MaxWait = 300 * time.Millisecond
	h := newHarness(t, testConfig(), w)
	c := h.dial()
	_, _ = c.Write([]byte("x"))
	if got := readAll(t, c); len(got) != 0 {
		t.Fatalf("got %q, want no response", got)
	}
	_, _, ns := h.rec.counts()
	if ns != 1 || !strings.Contains(h.rec.firstNotServed(), "api: no pod was Ready within maxWait") {
		t.Fatalf("not served %q", h.rec.firstNotServed())
	}
	if h.wakes(metrics.ResultTimedOut) != 1 {
		t.Fatal("timed_out not counted")
	}
}

func TestAPodNotListeningYetIsRetriedEverySecondUntilMaxWait(t *testing.T) {
	cfg := testConfig()
	failed := countFailedDials(&cfg)
	h := newHarness(t, cfg, testWorkload())
	port := testnet.FreePort(t)
	ap := netipAddrPort(t, port)
	h.table.SetEndpoints(h.route.Key(), ap)
	c := h.dial()
	_, _ = c.Write([]byte("hello"))
	wait(t, "two failed dials", func() bool { return failed() >= 2 })
	if h.wakes(metrics.ResultWoken) != 0 || h.held() != 1 {
		t.Fatal("a caller whose pod refused was not held for the retry")
	}
	b := newBackendOn(t, port)
	wait(t, "the replay after retries", func() bool { return string(b.received(0)) == "hello" })
}

// A caller waiting out the retry after a pod refused goes at once to a pod
// that turns Ready meanwhile, not a DialRetry later.
func TestAPodReadyDuringADialRetryIsTriedAtOnce(t *testing.T) {
	cfg := testConfig()
	cfg.DialRetry = time.Minute
	failed := countFailedDials(&cfg)
	h := newHarness(t, cfg, testWorkload())
	h.table.SetEndpoints(h.route.Key(), netipAddrPort(t, testnet.FreePort(t)))
	c := h.dial()
	_, _ = c.Write([]byte("hello"))
	// The first dial is the straight pass; the second is the held caller's,
	// after which it waits out the retry.
	wait(t, "two failed dials", func() bool { return failed() == 2 })
	if h.held() != 1 {
		t.Fatal("a caller whose pod refused was not held for the retry")
	}
	b := newBackend(t)
	h.ready(b)
	wait(t, "the replay to the pod that turned Ready", func() bool { return string(b.received(0)) == "hello" })
}

// countFailedDials makes cfg dial plainly, counting the dials that fail.
func countFailedDials(cfg *Config) (failed func() int) {
	var mu sync.Mutex
	n := 0
	var d net.Dialer
	cfg.Dial = func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
		c, err := d.DialContext(ctx, "tcp", ap.String())
		if err != nil {
			mu.Lock()
			n++
			mu.Unlock()
			return nil, err
		}
		return c.(*net.TCPConn), nil
	}
	return func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func TestUnreachablePodsUntilMaxWaitFail(t *testing.T) {
	w := testWorkload()
	w.MaxWait = 300 * time.Millisecond
	h := newHarness(t, testConfig(), w)
	h.table.SetEndpoints(h.route.Key(), netipAddrPort(t, testnet.FreePort(t)))
	c := h.dial()
	_, _ = c.Write([]byte("x"))
	readAll(t, c)
	wait(t, "failed", func() bool { return h.wakes(metrics.ResultFailed) == 1 })
	if !strings.Contains(h.rec.firstNotServed(), "could not be reached") {
		t.Fatalf("why: %q", h.rec.firstNotServed())
	}
}

func TestForbiddenEndpointsAreNeverDialled(t *testing.T) {
	cfg := testConfig()
	cfg.Rules.AllowLoopback = false
	w := testWorkload()
	w.MaxWait = 300 * time.Millisecond
	h := newHarness(t, cfg, w)
	b := newBackend(t)
	h.ready(b) // loopback: refused by the production rules
	c := h.dial()
	_, _ = c.Write([]byte("x"))
	readAll(t, c)
	if b.accepted() != 0 {
		t.Fatal("a loopback endpoint was dialled under production rules")
	}
}

func TestErrorsFromWakeAreRetried(t *testing.T) {
	h := newHarness(t, testConfig(), testWorkload())
	h.rec.mu.Lock()
	h.rec.wakeErr = errors.New("apiserver down")
	h.rec.mu.Unlock()
	c := h.dial()
	_, _ = c.Write([]byte("x"))
	wait(t, "several failed attempts", func() bool { h.rec.mu.Lock(); defer h.rec.mu.Unlock(); return h.rec.attempts >= 3 })
	h.rec.mu.Lock()
	h.rec.wakeErr = nil
	h.rec.mu.Unlock()
	wait(t, "the retried wake", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
}

// "Services shared with other workloads": every workload behind a Service
// paused, a request to it wakes them all, each once, and is passed on when
// a pod is Ready. A workload routed for another Service, or awake, is not
// woken.
func TestARequestToASharedServiceWakesEveryPausedWorkloadBehindIt(t *testing.T) {
	h := newHarness(t, testConfig(), testWorkload()) // preview-42/api, Service api
	canary := h.route
	canary.DoormanPort, canary.Workload.Name = testnet.FreePort(t), "api-canary"
	running := h.route
	running.DoormanPort, running.Workload.Name, running.Workload.Phase = testnet.FreePort(t), "api-old", "Running"
	other := h.route
	other.DoormanPort, other.Service, other.Workload.Name = testnet.FreePort(t), "web", "web"
	if failed := h.srv.SetRoutes([]Route{h.route, canary, running, other}); len(failed) > 0 {
		t.Fatal(failed)
	}
	b := newBackend(t)
	c := h.dial()
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: api\r\n\r\n"))
	wait(t, "both wakes", func() bool { n, _, _ := h.rec.counts(); return n >= 2 })
	wakes, _ := h.rec.lists()
	slices.Sort(wakes)
	if want := []string{"preview-42/api api 127.0.0.1", "preview-42/api-canary api 127.0.0.1"}; !slices.Equal(wakes, want) {
		t.Fatalf("wakes %q, want %q", wakes, want)
	}
	if got := h.rejections(CapWakePerSource) + h.rejections(CapWakeOverall); got != 0 {
		t.Fatalf("%v wakes refused", got)
	}
	h.ready(b)
	wait(t, "the request passed on", func() bool { return string(b.received(0)) == "GET / HTTP/1.1\r\nHost: api\r\n\r\n" })
	if n, _, _ := h.rec.counts(); n != 2 {
		t.Fatalf("%d wakes, want the two paused workloads behind Service api once each", n)
	}
}

// A Service shared by paused workloads is held under the strictest of the
// settings of those a request wakes: nothing wakes a workload in a way its
// own refuse, and one that asks is not woken by a request at all.
func TestASharedServiceIsHeldUnderTheStrictestTermsOfItsWorkloads(t *testing.T) {
	shared := func(t *testing.T, owner Workload, set func(*Workload)) *harness {
		t.Helper()
		h := newHarness(t, testConfig(), owner)
		sharer := h.route
		sharer.DoormanPort, sharer.Workload.Name = testnet.FreePort(t), "api-canary"
		set(&sharer.Workload)
		if failed := h.srv.SetRoutes([]Route{h.route, sharer}); len(failed) > 0 {
			t.Fatal(failed)
		}
		return h
	}
	// A paused workload that asks beside one that wakes on request, which
	// ever of them the Service's slice leads through: a request is held,
	// wakes the one that wakes on request, and is passed to its pod; the
	// one that asks is not woken.
	heldForTheOther := func(t *testing.T, h *harness, woken string) {
		t.Helper()
		b := newBackend(t)
		c := h.dial()
		_, _ = c.Write([]byte("GET /api HTTP/1.1\r\nHost: x\r\n\r\n"))
		wait(t, "the wake", func() bool { n, _, _ := h.rec.counts(); return n >= 1 })
		h.ready(b)
		wait(t, "the request at the pod", func() bool { return string(b.received(0)) == "GET /api HTTP/1.1\r\nHost: x\r\n\r\n" })
		wakes, _ := h.rec.lists()
		if want := []string{"preview-42/" + woken + " api 127.0.0.1"}; !slices.Equal(wakes, want) {
			t.Fatalf("wakes %q, want %q: the workload that asks stays asleep", wakes, want)
		}
		if _, ta, _ := h.rec.counts(); ta != 0 {
			t.Fatalf("%d turned away, want none", ta)
		}
	}
	t.Run("a sharer that asks: a request is held and wakes the owner only", func(t *testing.T) {
		heldForTheOther(t, shared(t, testWorkload(), func(w *Workload) { w.Ask = true }), "api")
	})
	t.Run("the owner asks, a sharer does not: a request is held and wakes the sharer only", func(t *testing.T) {
		owner := testWorkload()
		owner.Ask = true
		heldForTheOther(t, shared(t, owner, func(w *Workload) { w.Ask = false }), "api-canary")
	})
	t.Run("every workload asks: a request is turned away, nothing wakes", func(t *testing.T) {
		owner := testWorkload()
		owner.Ask = true
		h := shared(t, owner, func(w *Workload) { w.Ask = true })
		c := h.dial()
		_, _ = c.Write([]byte("GET /api HTTP/1.1\r\nHost: x\r\n\r\n"))
		if got := readAll(t, c); !bytes.Equal(got, page.Asleep(false, false)) {
			t.Fatalf("got %q, want the asleep answer", got)
		}
		wait(t, "turned away", func() bool { _, ta, _ := h.rec.counts(); return ta == 1 })
		if n, _, _ := h.rec.counts(); n != 0 {
			t.Fatalf("%d wakes; every workload asks", n)
		}
	})
	t.Run("a Running sharer that asks has no say", func(t *testing.T) {
		h := shared(t, testWorkload(), func(w *Workload) { w.Ask, w.Phase = true, "Running" })
		c := h.dial()
		_, _ = c.Write([]byte("GET /api HTTP/1.1\r\nHost: x\r\n\r\n"))
		wait(t, "the owner woken", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
	})
	t.Run("a sharer without the page: a browser is held", func(t *testing.T) {
		browserIsHeld(t, shared(t, testWorkload(), func(w *Workload) { w.Page = false }), 2)
	})
	t.Run("a sharer that waits longer: held past the owner's maxWait", func(t *testing.T) {
		owner := testWorkload()
		owner.MaxWait = 300 * time.Millisecond
		h := shared(t, owner, func(w *Workload) { w.MaxWait = 5 * time.Second })
		b := newBackend(t)
		c := h.dial()
		_, _ = c.Write([]byte("x"))
		// Nothing may come back for twice the owner's maxWait.
		_ = c.SetReadDeadline(time.Now().Add(600 * time.Millisecond))
		if n, err := c.Read(make([]byte, 1)); !isTimeout(err) {
			t.Fatalf("read %d bytes, %v; want the caller still held", n, err)
		}
		h.ready(b)
		wait(t, "the request at the pod", func() bool { return string(b.received(0)) == "x" })
	})
}
