package proxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// When pods turn Ready with callers held, at most Config.Dialling dials
// are in flight at once, and every caller still reaches its pod. The
// callers are of four workloads in two namespaces, whose shares of the
// diallers together allow more than the cap.
func TestHeldCallersDialAtMostDiallingAtOnce(t *testing.T) {
	const held, cap = 16, 4
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
	routes := []Route{h.route}
	for _, ns := range []string{"preview-42", "preview-43"} {
		for _, name := range []string{"api", "web"} {
			if ns != w.Namespace || name != w.Name {
				other := w
				other.Namespace, other.Name = ns, name
				routes = append(routes, h.newRoute(other, name, "http"))
			}
		}
	}
	h.serve(routes[1:]...)
	for i := range held {
		_, _ = h.dialPort(routes[i%len(routes)].DoormanPort, "127.0.0.1").Write([]byte("GET /" + strconv.Itoa(i) + " HTTP/1.1\r\nHost: api\r\n\r\n"))
	}
	wait(t, "every caller held", func() bool { return h.held() == held })
	for _, r := range routes {
		h.table.SetEndpoints(r.Key(), []netip.AddrPort{b.ap()})
	}
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

// synDropper is a pod whose every SYN is dropped, as a black-holing
// network policy or a wedged node does: a listener whose accept queue is
// full (one connection, never accepted), so the kernel drops the SYNs of
// every connection after it.
func synDropper(t *testing.T) netip.AddrPort {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(sa.(*unix.SockaddrInet4).Port))
	filler, err := net.Dial("tcp", ap.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = filler.Close() })
	return ap
}

// countingDial is the default dial (Dialer), counting the dials to the
// endpoint stuck that are in flight.
func countingDial(cfg *Config, stuck netip.AddrPort) (inFlight func() int) {
	var mu sync.Mutex
	n := 0
	dial := Dialer(cfg.DialTimeout)
	cfg.Dial = func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
		if ap == stuck {
			mu.Lock()
			n++
			mu.Unlock()
			defer func() { mu.Lock(); n--; mu.Unlock() }()
		}
		return dial(ctx, ap)
	}
	return func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// A tenant whose pods drop SYNs holds each of its dials until its caller's
// maxWait or its leaving; on however many Service ports and workloads, it
// may take at most its workloads' and its namespace's shares of the
// diallers (half and three quarters), so another tenant's caller is still
// passed on at once; and its callers leaving free their dials.
func TestATenantWhosePodsDropSYNsDoesNotHoldUpAnother(t *testing.T) {
	const dialling, perRoute = 8, 10
	for _, tc := range []struct {
		name  string
		share int // the stuck tenant's dials in flight
		route func(h *harness) Route
	}{
		{"two Service ports of one workload", dialling / 2, func(h *harness) Route { return h.newRoute(h.route.Workload, "api", "grpc") }},
		{"two workloads of one namespace", dialling - dialling/4, func(h *harness) Route {
			w := h.route.Workload
			w.Name = "web"
			return h.newRoute(w, "web", "http")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dropper := synDropper(t)
			cfg := testConfig()
			cfg.Dialling = dialling
			cfg.DialTimeout = time.Minute // only the caller ends a dial
			inFlight := countingDial(&cfg, dropper)
			w := testWorkload()
			w.Phase = "Resuming"
			w.MaxWait = time.Minute
			h := newHarness(t, cfg, w)
			second := tc.route(h)
			other := Workload{Namespace: "preview-43", Name: "app", Phase: "Resuming", MaxWait: time.Minute}
			otherRoute := h.newRoute(other, "app", "http")
			h.serve(second, otherRoute)
			var stuck []*net.TCPConn
			for _, r := range []Route{h.route, second} {
				h.table.SetEndpoints(r.Key(), []netip.AddrPort{dropper})
				for i := range perRoute {
					c := h.dialPort(r.DoormanPort, "127.0.0.1")
					_, _ = c.Write([]byte("GET /" + strconv.Itoa(i) + " HTTP/1.1\r\nHost: api\r\n\r\n"))
					stuck = append(stuck, c)
				}
			}
			wait(t, "the stuck tenant's share of dials in flight", func() bool { return inFlight() == tc.share })

			b := newBackend(t)
			h.table.SetEndpoints(otherRoute.Key(), []netip.AddrPort{b.ap()})
			c := h.dialPort(otherRoute.DoormanPort, "127.0.0.2")
			start := time.Now()
			_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: app\r\n\r\n"))
			wait(t, "the other tenant's caller at its pod", func() bool { return b.accepted() == 1 })
			if d := time.Since(start); d > time.Second {
				t.Fatalf("the other tenant's caller reached its pod after %v", d)
			}
			if n := inFlight(); n != tc.share {
				t.Fatalf("%d dials to the stuck tenant in flight, want its share %d", n, tc.share)
			}

			// Its callers leave: their dials end, though no SYN is answered
			// and the dial timeout is a minute away.
			for _, c := range stuck {
				_ = c.Close()
			}
			waitWithin(t, 2*time.Second, "the stuck dials to end with their callers", func() bool { return inFlight() == 0 })
		})
	}
}

// slowPod is a pod that accepts every connection and reads each at 1 KiB
// a second, through a receive buffer of a few KiB: a single-threaded dev
// server busy with something else. It returns its address and how many
// connections it accepted.
func slowPod(t *testing.T) (netip.AddrPort, func() int) {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		return control(rc, func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<10) })
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				tick := time.NewTicker(time.Second) // the pod's pace, not a wait for the test
				defer tick.Stop()
				p := make([]byte, 1<<10)
				for range tick.C {
					if _, err := c.Read(p); err != nil {
						return
					}
				}
			}()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String()), func() int { mu.Lock(); defer mu.Unlock(); return len(conns) }
}

// dialPodNetwork is the default dial with the send buffer a pod network
// gives the doorman's socket: over loopback, whose segments are 64 KiB,
// the kernel sizes it at over a megabyte, more than any replay, so a slow
// pod would never make a replay wait here as it does across nodes.
func dialPodNetwork(timeout time.Duration) func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
	dial := Dialer(timeout)
	return func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
		c, err := dial(ctx, ap)
		if err == nil {
			err = c.SetWriteBuffer(64 << 10)
		}
		return c, err
	}
}

// A pod that accepts but reads slowly keeps only its own callers waiting:
// uploads held for it on two Service ports, more of them than there are
// diallers, each replayed while it reads 1 KiB a second, leave another
// tenant's held caller to be passed on within a second of its pod turning
// Ready, at the default limits. A caller that leaves mid-replay ends it.
func TestAPodThatReadsSlowlyHoldsUpNoOtherTenant(t *testing.T) {
	const perPort, upload, dialling = 40, 256 << 10, 64 // dialling: Config.Dialling's default
	cfg := testConfig()
	cfg.Dial = dialPodNetwork(cfg.DialTimeout)
	w := testWorkload()
	w.Phase = "Resuming"
	w.MaxWait = time.Minute
	h := newHarness(t, cfg, w)
	grpc := h.newRoute(w, "api", "grpc")
	other := Workload{Namespace: "preview-43", Name: "app", Phase: "Resuming", MaxWait: time.Minute}
	otherRoute := h.newRoute(other, "app", "http")
	h.serve(grpc, otherRoute)

	body := bytes.Repeat([]byte("u"), upload)
	var uploaders []*net.TCPConn
	for _, r := range []Route{h.route, grpc} {
		for range perPort {
			c := h.dialPort(r.DoormanPort, "127.0.0.1")
			uploaders = append(uploaders, c)
			go func() { _, _ = c.Write(body) }()
		}
	}
	counted := 2 * perPort * (upload - cfg.Limits.FreeBytes)
	wait(t, "every upload held whole", func() bool {
		h.srv.caps.mu.Lock()
		defer h.srv.caps.mu.Unlock()
		return h.srv.caps.bytesFree == cfg.Limits.TotalBytes-counted
	})
	var accepted []func() int
	for _, r := range []Route{h.route, grpc} {
		ap, n := slowPod(t)
		accepted = append(accepted, n)
		h.table.SetEndpoints(r.Key(), []netip.AddrPort{ap})
	}
	wait(t, "more replays under way than there are diallers", func() bool { return accepted[0]()+accepted[1]() >= dialling })

	b := newBackend(t)
	c := h.dialPort(otherRoute.DoormanPort, "127.0.0.2")
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: app\r\n\r\n"))
	wait(t, "the other tenant's caller held", func() bool { return h.held() == 2*perPort+1 })
	h.table.SetEndpoints(otherRoute.Key(), []netip.AddrPort{b.ap()})
	waitWithin(t, time.Second, "the other tenant's caller at its pod within 1 s of it turning Ready", func() bool { return len(b.received(0)) > 0 })

	// The uploaders give up: their replays end with them, unfinished.
	for _, c := range uploaders {
		_ = c.Close()
	}
	waitWithin(t, 2*time.Second, "the replays to end with their callers", func() bool { return h.held() == 0 })
}

// A replay to a pod that reads too slowly to take it within the caller's
// maxWait ends there: the caller is not served, and told so as any caller
// held past maxWait is.
func TestAReplayEndsAtTheCallersMaxWait(t *testing.T) {
	const upload = 256 << 10
	cfg := testConfig()
	cfg.Dial = dialPodNetwork(cfg.DialTimeout)
	w := testWorkload()
	w.Phase = "Resuming"
	w.MaxWait = time.Second
	h := newHarness(t, cfg, w)
	c := h.dial()
	start := time.Now()
	go func() { _, _ = c.Write(bytes.Repeat([]byte("u"), upload)) }()
	wait(t, "the upload held", func() bool {
		h.srv.caps.mu.Lock()
		defer h.srv.caps.mu.Unlock()
		return h.srv.caps.bytesFree == cfg.Limits.TotalBytes-(upload-cfg.Limits.FreeBytes)
	})
	ap, accepted := slowPod(t)
	h.table.SetEndpoints(h.route.Key(), []netip.AddrPort{ap})
	wait(t, "the replay under way", func() bool { return accepted() == 1 })
	if got := readAll(t, c); len(got) != 0 {
		t.Fatalf("the caller got %q, want nothing", got)
	}
	if d := time.Since(start); d > w.MaxWait+time.Second {
		t.Fatalf("the caller was let go %v after it came, its maxWait %v", d, w.MaxWait)
	}
	wait(t, "the caller reported not served", func() bool { _, _, n := h.rec.counts(); return n == 1 })
}
