package proxy

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"napwake.dev/shared/testnet"
)

// When a pod turns Ready with callers held, at most Config.Dialling dials
// are in flight at once, and every caller still reaches the pod.
func TestHeldCallersDialAtMostDiallingAtOnce(t *testing.T) {
	const held, cap = 7, 2
	var mu sync.Mutex
	inFlight, most := 0, 0
	gate := make(chan struct{})
	cfg := testConfig()
	cfg.Dialling = cap
	cfg.Dial = func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return dialTCP(ctx, ap)
	}
	w := testWorkload()
	w.Phase = "Resuming"
	h := newHarness(t, cfg, w)
	b := newBackend(t)
	for i := range held {
		_, _ = h.dial().Write([]byte("GET /" + strconv.Itoa(i) + " HTTP/1.1\r\nHost: api\r\n\r\n"))
	}
	wait(t, "every caller held", func() bool { return h.held() == held })
	h.ready(b)
	wait(t, "the cap's worth of dials in flight", func() bool { mu.Lock(); defer mu.Unlock(); return inFlight == cap })
	close(gate)
	wait(t, "every caller at the pod", func() bool { return b.accepted() == held })
	mu.Lock()
	defer mu.Unlock()
	if most != cap {
		t.Fatalf("at most %d dials were in flight, want exactly the cap %d", most, cap)
	}
}

// A held caller passed on, on which neither side has spoken since the
// replay, holds no splice pipe: hundreds moving at once make none.
func TestAQuietPassedConnectionHoldsNoPipe(t *testing.T) {
	const quiet = 20
	w := testWorkload()
	w.Phase = "Resuming"
	h := newHarness(t, testConfig(), w)
	b := newBackend(t)
	for range quiet {
		_, _ = h.dial().Write([]byte("x"))
	}
	wait(t, "every caller held", func() bool { return h.held() == quiet })
	before := openPipes(t)
	h.ready(b)
	wait(t, "every connection passed", func() bool { return b.accepted() == quiet })
	wait(t, "every replay at the pod", func() bool {
		for i := range quiet {
			if string(b.received(i)) != "x" {
				return false
			}
		}
		return true
	})
	if got := openPipes(t) - before; got > 2 { // 2: room for one pipe pair made elsewhere in the process
		t.Fatalf("%d more pipe descriptors with %d quiet passed connections, want none", got, quiet)
	}
	// Once one speaks it is copied as before, each way.
	b.set(nil, true)
	c := h.dial()
	_, _ = c.Write([]byte("ping"))
	_ = c.CloseWrite()
	if got := string(readAll(t, c)); got != "pingbye" {
		t.Fatalf("caller got %q, want the echo and the pod's answer after half-close", got)
	}
}

func openPipes(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "pipe:") {
			n++
		}
	}
	return n
}

// Once a passed connection carries bytes, the kernel buffers they go
// through in the doorman are capped at Config.SocketBuffer each way (the
// kernel reports double); a negative SocketBuffer leaves them to the
// kernel's autotuning.
func TestAPassedConnectionsSocketBuffersAreCapped(t *testing.T) {
	const capped = 48 << 10 // neither the kernel's default receive nor send buffer
	for _, tc := range []struct {
		name string
		buf  int
		want bool
	}{{"capped", capped, true}, {"autotuned", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.SocketBuffer = tc.buf
			h, _, c := echoPassing(t, cfg, "Resuming")
			got := make([]byte, 4)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
				t.Fatalf("echo %q %v", got, err)
			}
			// Both halves have copied: each of the doorman's two sockets
			// had its receive buffer (as src) and send buffer (as dst) set.
			h.srv.mu.Lock()
			var socks []*net.TCPConn
			for s := range h.srv.conns {
				socks = append(socks, s)
			}
			h.srv.mu.Unlock()
			if len(socks) != 2 {
				t.Fatalf("%d tracked sockets, want the caller's and the pod's", len(socks))
			}
			for _, s := range socks {
				rcv, snd := sockBuffers(t, s)
				if capped := rcv == 2*capped && snd == 2*capped; capped != tc.want {
					t.Errorf("SO_RCVBUF %d SO_SNDBUF %d with SocketBuffer %d", rcv, snd, tc.buf)
				}
			}
		})
	}
}

func sockBuffers(t *testing.T, c *net.TCPConn) (rcv, snd int) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var e1, e2 error
	if err := rc.Control(func(fd uintptr) {
		rcv, e1 = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		snd, e2 = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	}); err != nil || e1 != nil || e2 != nil {
		t.Fatal(err, e1, e2)
	}
	return rcv, snd
}

// A workload whose pods drop SYNs holds each of its dials for the whole
// dial timeout; it may take at most its share (three quarters) of the
// diallers, so another workload's caller is still passed on at once.
func TestAWorkloadWhosePodsDropSYNsDoesNotHoldUpAnother(t *testing.T) {
	const dialling, stuckCallers = 4, 10
	blackhole := netip.MustParseAddrPort("127.0.0.1:9") // stands for a pod that never answers
	var mu sync.Mutex
	stuck := 0
	gate := make(chan struct{})
	cfg := testConfig()
	cfg.Dialling = dialling
	cfg.Dial = func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
		if ap == blackhole {
			mu.Lock()
			stuck++
			mu.Unlock()
			select { // a SYN nobody answers: the dial ends only at its timeout
			case <-gate:
			case <-ctx.Done():
			}
			return nil, context.DeadlineExceeded
		}
		return dialTCP(ctx, ap)
	}
	defer close(gate)
	w := testWorkload()
	w.Phase = "Resuming"
	h := newHarness(t, cfg, w)
	other := w
	other.Name = "web"
	otherRoute := Route{DoormanPort: testnet.FreePort(t), Service: "web", PortName: "http", Port: 80, Workload: other}
	if failed := h.srv.SetRoutes([]Route{h.route, otherRoute}); len(failed) > 0 {
		t.Fatalf("SetRoutes: %v", failed)
	}
	h.table.SetEndpoints(h.route.Key(), []netip.AddrPort{blackhole})
	for i := range stuckCallers {
		_, _ = h.dial().Write([]byte("GET /" + strconv.Itoa(i) + " HTTP/1.1\r\nHost: api\r\n\r\n"))
	}
	wait(t, "the stuck workload's share of dials in flight", func() bool { mu.Lock(); defer mu.Unlock(); return stuck == dialling-dialling/4 })

	b := newBackend(t)
	h.table.SetEndpoints(otherRoute.Key(), []netip.AddrPort{b.ap()})
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(otherRoute.DoormanPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: web\r\n\r\n"))
	wait(t, "the other workload's caller at its pod", func() bool { return b.accepted() == 1 })
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the other workload's caller reached its pod after %v", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if stuck != dialling-dialling/4 {
		t.Fatalf("%d dials to the stuck workload in flight, want its share %d", stuck, dialling-dialling/4)
	}
}
