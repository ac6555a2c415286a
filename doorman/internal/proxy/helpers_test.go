package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"napwake.dev/doorman/internal/addr"
	"napwake.dev/doorman/internal/ask"
	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/shared/testnet"
)

// wait polls cond every 5 ms until it holds or 5 s pass.
func wait(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 5*time.Second, what, cond)
}

// waitWithin is wait with its own bound, for a step whose time grows with
// what it moves (the race detector makes 32 MiB through loopback take
// seconds on two busy cores).
func waitWithin(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling with a bound, not waiting for an event
	}
}

// recorder records what the proxy asks of Kubernetes.
type recorder struct {
	mu         sync.Mutex
	wakes      []string // "service from"
	turnedAway int
	notServed  []string
	wakeErr    error
	attempts   int      // Wake calls, failed or not
	entered    int      // Wake calls begun, counted before wakeGate
	active     []string // Active calls, by workload
	// wakeGate, when set, holds every Wake until it is closed (or the
	// patch's context ends): an API server slow to answer.
	wakeGate chan struct{}
	// lastClick stands in for the ManagedWorkload's napwake.dev/last-request,
	// which every doorman pod sees: harnesses that share one are two pods.
	lastClick *clickStore
	// clickErr, when set, is every Click's error: an API server away.
	clickErr error
}

// clickStore is one ManagedWorkload's last wake request, written under its
// lock as the API server's resourceVersion guard would.
type clickStore struct {
	// always: every click wakes (a benchmark's, measuring the path).
	always bool
	mu     sync.Mutex
	last   time.Time
	clicks []string // "workload service from" of each click that woke
}

func (r *recorder) Click(_ context.Context, w Workload, service string, from netip.Addr) (bool, error) {
	r.mu.Lock()
	err := r.clickErr
	r.mu.Unlock()
	if err != nil {
		return false, err
	}
	s := r.lastClick
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if !s.always && ask.RecentWake(s.last, now) {
		return false, nil
	}
	s.last = now
	s.clicks = append(s.clicks, w.Key()+" "+service+" "+from.String())
	return true, nil
}

func (s *clickStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clicks)
}

func (r *recorder) Wake(ctx context.Context, w Workload, service string, from netip.Addr) error {
	r.mu.Lock()
	gate := r.wakeGate
	r.entered++
	r.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts++
	if r.wakeErr != nil {
		return r.wakeErr
	}
	r.wakes = append(r.wakes, w.Key()+" "+service+" "+from.String())
	return nil
}

func (r *recorder) Active(_ context.Context, w Workload) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active = append(r.active, w.Key())
	return nil
}

func (r *recorder) TurnedAway(Workload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turnedAway++
}

func (r *recorder) NotServed(_ Workload, service string, waited time.Duration, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notServed = append(r.notServed, service+": "+why)
}

func (r *recorder) counts() (wakes, turned, notServed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.wakes), r.turnedAway, len(r.notServed)
}

// backend is a test pod: it records what each connection sends and can
// answer.
type backend struct {
	ln    net.Listener
	mu    sync.Mutex
	got   []*bytes.Buffer
	conns []net.Conn
	greet []byte
	echo  bool
}

func newBackend(t testing.TB) *backend { t.Helper(); return newBackendOn(t, 0) }

// newBackendOn starts a backend on a loopback port; 0 picks one.
func newBackendOn(t testing.TB, port int) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go b.serve()
	return b
}

// set makes later connections greet first and/or echo.
func (b *backend) set(greet []byte, echo bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.greet, b.echo = greet, echo
}

// serve accepts and records connections until the listener closes.
func (b *backend) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		buf := &bytes.Buffer{}
		b.mu.Lock()
		b.got = append(b.got, buf)
		b.conns = append(b.conns, c)
		greet, echo := b.greet, b.echo
		b.mu.Unlock()
		go func() {
			defer c.Close()
			if len(greet) > 0 {
				_, _ = c.Write(greet)
			}
			p := make([]byte, 32<<10)
			for {
				n, err := c.Read(p)
				b.mu.Lock()
				buf.Write(p[:n])
				b.mu.Unlock()
				if echo && n > 0 {
					_, _ = c.Write(p[:n])
				}
				if err != nil {
					if errors.Is(err, io.EOF) && echo {
						_, _ = c.Write([]byte("bye"))
						_ = c.(*net.TCPConn).CloseWrite()
					}
					return
				}
			}
		}()
	}
}

func (b *backend) ap() netip.AddrPort { return netip.MustParseAddrPort(b.ln.Addr().String()) }

func (b *backend) accepted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.got)
}

func (b *backend) received(i int) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i >= len(b.got) {
		return nil
	}
	return bytes.Clone(b.got[i].Bytes())
}

// harness is a server on one route, its table, recorder and metrics.
type harness struct {
	t     testing.TB
	srv   *Server
	table *Table
	rec   *recorder
	m     *metrics.Metrics
	route Route
	port  int
	ports map[int]bool // doorman ports of routes added (newRoute)
}

func testConfig() Config {
	l := DefaultLimits()
	return Config{
		ListenAddress: "127.0.0.1",
		Rules:         addr.Rules{AllowLoopback: true},
		Limits:        l,
		Silence:       150 * time.Millisecond,
		DialRetry:     50 * time.Millisecond,
		DialTimeout:   time.Second,
		WakeRetry:     50 * time.Millisecond,
	}
}

func testWorkload() Workload {
	return Workload{Namespace: "preview-42", Name: "api", Page: true, MaxWait: 5 * time.Second, Phase: "Paused"}
}

func newHarness(t testing.TB, cfg Config, w Workload) *harness {
	t.Helper()
	return newHarnessRec(t, cfg, w, &recorder{lastClick: &clickStore{}})
}

// newHarnessRec is newHarness recording into rec.
func newHarnessRec(t testing.TB, cfg Config, w Workload, rec *recorder) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, table: NewTable(), rec: rec, m: metrics.New()}
	h.srv = New(cfg, h.table, h.rec, h.m)
	h.srv.Start(ctx)
	h.port = testnet.FreePort(t)
	h.route = Route{DoormanPort: h.port, Service: "api", PortName: "http", Port: 80, Workload: w}
	if failed := h.srv.SetRoutes([]Route{h.route}); len(failed) > 0 {
		t.Fatalf("SetRoutes: %v", failed)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		defer scancel()
		h.srv.Shutdown(sctx)
		cancel()
	})
	return h
}

func (h *harness) dial() *net.TCPConn { return h.dialFrom("127.0.0.1") }

func (h *harness) dialFrom(src string) *net.TCPConn {
	h.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.port)))
	if errors.Is(err, syscall.ECONNRESET) {
		return nil // closed at once, before the dial returned
	}
	if err != nil {
		h.t.Fatalf("dialling the doorman: %v", err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

func (h *harness) ready(b *backend) { h.table.SetEndpoints(h.route.Key(), []netip.AddrPort{b.ap()}) }

func (h *harness) held() float64 { return testutil.ToFloat64(h.m.Held) }

func (h *harness) wakes(result string) float64 {
	return testutil.ToFloat64(h.m.Wakes.WithLabelValues(result))
}

func (h *harness) rejections(cap string) float64 {
	return testutil.ToFloat64(h.m.Rejections.WithLabelValues(cap))
}

// readAll reads until EOF with a 5 s bound.
func readAll(t testing.TB, c net.Conn) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading from the doorman: %v (got %q)", err, b)
	}
	return b
}

// closedAtOnce reports whether c is closed with nothing sent within 1 s.
func closedAtOnce(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	n, err := c.Read(make([]byte, 1))
	return n == 0 && err != nil && !isTimeout(err)
}

func netipAddrPort(t testing.TB, port int) []netip.AddrPort {
	t.Helper()
	return []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))}
}

func (r *recorder) lists() (wakes, notServed []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.wakes...), append([]string(nil), r.notServed...)
}

func (r *recorder) firstNotServed() string {
	_, ns := r.lists()
	if len(ns) == 0 {
		return ""
	}
	return ns[0]
}

func (r *recorder) firstWake() string {
	w, _ := r.lists()
	if len(w) == 0 {
		return ""
	}
	return w[0]
}

// dialTCP dials ap, as the default dial does without its socket options.
func dialTCP(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// echoPassing starts a harness for a workload in phase with an echoing pod
// Ready, and a caller that has sent "ping": the connection goes straight
// through.
func echoPassing(t *testing.T, cfg Config, phase string) (*harness, *backend, *net.TCPConn) {
	t.Helper()
	w := testWorkload()
	w.Phase = phase
	h := newHarness(t, cfg, w)
	b := newBackend(t)
	b.set(nil, true)
	h.ready(b)
	c := h.dial()
	_, _ = c.Write([]byte("ping"))
	return h, b, c
}
