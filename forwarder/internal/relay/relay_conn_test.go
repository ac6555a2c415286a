package relay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// echoDoorman stands a doorman in on addr: it reads each connection to its
// end (the caller's half-close), reports what came, and answers "reply:"
// and the same bytes. Ready's probe connections send nothing.
func echoDoorman(t *testing.T, addr string) (net.Listener, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	got := make(chan []byte, 16)
	go func() {
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			go echo(c, got)
		}
	}()
	return ln, got
}

// echo reads c to its end, reports it on got and answers "reply:" and the
// same bytes; a read error is reported as "error:" and the error.
func echo(c net.Conn, got chan<- []byte) {
	defer c.Close()
	b, err := io.ReadAll(c)
	if err != nil {
		got <- append([]byte("error:"), err.Error()...)
		return
	}
	if len(b) > 0 {
		got <- b
		_, _ = c.Write(append([]byte("reply:"), b...))
	}
}

// startRelay runs a relay from a free loopback port to the doorman's port,
// shut down at the end of the test; it returns the caller's address.
func startRelay(t *testing.T, r *Relay) string {
	t.Helper()
	r.DoormanHost, r.ListenHost, r.Log = "127.0.0.1", "127.0.0.1", logr.Discard()
	if r.DialTimeout == 0 {
		r.DialTimeout = 2 * time.Second
	}
	addrs, err := r.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.Shutdown(ctx)
	})
	return addrs[0].String()
}

// relayToEcho runs a relay to a new echoDoorman and dials it.
func relayToEcho(t *testing.T) (*Relay, net.Conn, <-chan []byte) {
	t.Helper()
	doorman, got := echoDoorman(t, "127.0.0.1:0")
	r := &Relay{Mappings: []Mapping{{Listen: 0, Doorman: portOf(t, doorman)}}}
	c, err := net.Dial("tcp", startRelay(t, r))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return r, c, got
}

func portOf(t *testing.T, ln net.Listener) int {
	t.Helper()
	return ln.Addr().(*net.TCPAddr).Port
}

// call sends payload, half-closes and returns everything the relay sends
// back until it closes. A reset can come as early as the dial.
func call(t *testing.T, addr string, payload []byte) ([]byte, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Write(payload); err != nil {
		return nil, err
	}
	_ = c.(*net.TCPConn).CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return io.ReadAll(c)
}

// eventually polls cond every 10 ms for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("after 5 s: %s", what)
}

var payload = append([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 0, 0xff, '\r', '\n', 0x80)

func TestTheRelayPassesBytesUntouchedBothWaysAndPassesTheHalfCloseOn(t *testing.T) {
	doorman, got := echoDoorman(t, "127.0.0.1:0")
	r := &Relay{Mappings: []Mapping{{Listen: 0, Doorman: portOf(t, doorman)}}}
	addr := startRelay(t, r)
	if err := r.Ready(context.Background()); err != nil {
		t.Fatalf("Ready with the doorman listening: %v", err)
	}
	reply, err := call(t, addr, payload)
	if err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, payload) {
		t.Fatalf("the doorman got %q, want %q", b, payload)
	}
	if want := append([]byte("reply:"), payload...); !bytes.Equal(reply, want) {
		t.Fatalf("the caller got %q, want %q", reply, want)
	}
	eventually(t, "the relay closes both connections", func() bool { return r.open() == 0 })
}

func TestACallerThatResetsResetsItsDoormanConnectionAndLeavesNothingOpen(t *testing.T) {
	r, c, got := relayToEcho(t)
	addr := c.RemoteAddr().String()
	if _, err := c.Write([]byte("partial request")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the relay has the caller's and the doorman's connection open", func() bool { return r.open() == 2 })
	_ = c.(*net.TCPConn).SetLinger(0)
	_ = c.Close() // a reset
	select {
	case b := <-got:
		if !bytes.HasPrefix(b, []byte("error:")) {
			t.Fatalf("the doorman read %q to a clean end; want the reset passed on", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the doorman's connection stayed open after the caller reset")
	}
	eventually(t, "the relay closes both connections", func() bool { return r.open() == 0 })
	if reply, err := call(t, addr, payload); err != nil || !bytes.Equal(reply, append([]byte("reply:"), payload...)) {
		t.Fatalf("a caller after the reset got %q, %v", reply, err)
	}
}

func TestTheDoormanGoingAwayFailsReadyAndResetsCallersUntilItComesBack(t *testing.T) {
	doorman, _ := echoDoorman(t, "127.0.0.1:0")
	dport := portOf(t, doorman)
	r := &Relay{Mappings: []Mapping{{Listen: 0, Doorman: dport}}}
	addr := startRelay(t, r)
	_ = doorman.Close()
	if err := r.Ready(context.Background()); err == nil {
		t.Fatal("Ready with the doorman gone")
	}
	if reply, err := call(t, addr, payload); len(reply) != 0 || err == nil {
		t.Fatalf("a caller with the doorman gone got %q, %v; want a reset and nothing", reply, err)
	}
	_, got := echoDoorman(t, "127.0.0.1:"+strconv.Itoa(dport))
	if err := r.Ready(context.Background()); err != nil {
		t.Fatalf("Ready with the doorman back: %v", err)
	}
	reply, err := call(t, addr, payload)
	if err != nil || !bytes.Equal(reply, append([]byte("reply:"), payload...)) {
		t.Fatalf("a caller with the doorman back got %q, %v", reply, err)
	}
	if b := <-got; !bytes.Equal(b, payload) {
		t.Fatalf("the doorman back got %q, want %q", b, payload)
	}
}

// flakyListener fails its first n Accepts, as a listener out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, errors.New("accept4: too many open files")
	}
	return l.Listener.Accept()
}

func TestTheRelayKeepsAcceptingAfterAnAcceptError(t *testing.T) {
	doorman, _ := echoDoorman(t, "127.0.0.1:0")
	var flaky *flakyListener
	r := &Relay{Mappings: []Mapping{{Listen: 0, Doorman: portOf(t, doorman)}}, listen: func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		flaky = &flakyListener{Listener: ln}
		flaky.fails.Store(5)
		return flaky, err
	}}
	addr := startRelay(t, r)
	reply, err := call(t, addr, payload)
	if err != nil || !bytes.Equal(reply, append([]byte("reply:"), payload...)) {
		t.Fatalf("a caller after 5 accept errors got %q, %v", reply, err)
	}
	if n := flaky.fails.Load(); n >= 0 {
		t.Fatalf("%d accept errors left; want all 5 met", n+1)
	}
}

func TestShutdownStopsAcceptingAtOnceAndClosesWhatIsLeftWhenItsTimeEnds(t *testing.T) {
	r, c, _ := relayToEcho(t)
	addr := c.RemoteAddr().String()
	eventually(t, "the relay has the connection open", func() bool { return r.open() == 2 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Shutdown(ctx); close(done) }()
	eventually(t, "new callers are refused", func() bool {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			_ = nc.Close()
		}
		return err != nil
	})
	// The open connection still carries bytes while Shutdown waits.
	if _, err := c.Write([]byte("still here")); err != nil {
		t.Fatalf("writing while Shutdown waits: %v", err)
	}
	select {
	case <-done:
		t.Fatal("Shutdown returned with a connection open and its time not over")
	default:
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after its time ended")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("reading after Shutdown: %v; want the connection closed", err)
	}
	if n := r.open(); n != 0 {
		t.Fatalf("%d connections open after Shutdown", n)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

// TestAConnectionThatCarriesNothingForTheIdleTimeoutIsClosedAndPingsKeepItOpen:
// the doorman's limit on a passed-through connection that carries nothing
// either way holds here too (docs/compatibility.md), shortened to a second: a
// caller that goes quiet is closed, at both ends, soon after it; one that
// pings now and then is kept.
func TestAConnectionThatCarriesNothingForTheIdleTimeoutIsClosedAndPingsKeepItOpen(t *testing.T) {
	const idle = time.Second
	doorman, got := echoDoorman(t, "127.0.0.1:0")
	r := &Relay{IdleTimeout: idle, Mappings: []Mapping{{Listen: 0, Doorman: portOf(t, doorman)}}}
	addr := startRelay(t, r)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	quiet, pinged := dial(), dial()
	pings := make(chan error, 1)
	go func() {
		for end := time.Now().Add(3 * idle); time.Now().Before(end); time.Sleep(idle / 10) {
			if _, err := pinged.Write([]byte("p")); err != nil {
				pings <- err
				return
			}
		}
		pings <- nil
	}()
	if _, err := quiet.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = quiet.SetReadDeadline(start.Add(idle + 3*time.Second))
	n, err := quiet.Read(make([]byte, 1))
	took := time.Since(start)
	if n != 0 || (!errors.Is(err, io.EOF) && !isReset(err)) {
		t.Fatalf("the quiet caller read %d bytes, %v; want the connection closed", n, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the quiet caller was still open %s after it went quiet; want it closed after %s", took, idle)
	}
	if took < idle-50*time.Millisecond || took > idle+2*time.Second {
		t.Fatalf("the quiet caller was closed %s after it went quiet; want %s, and soon after", took, idle)
	}
	if b := <-got; !bytes.Equal(b, []byte("q")) {
		t.Fatalf("the doorman's end of the quiet connection read %q; want it closed after \"q\"", b)
	}
	if err := <-pings; err != nil {
		t.Fatalf("pinging for %s: %v; want the pinged connection kept", 3*idle, err)
	}
	_ = pinged.(*net.TCPConn).CloseWrite()
	_ = pinged.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, err := io.ReadAll(pinged)
	if err != nil || !bytes.HasPrefix(reply, []byte("reply:p")) {
		t.Fatalf("the pinged caller got %q, %v at the end; want the doorman's reply to its pings", reply, err)
	}
	eventually(t, "the relay closes every connection", func() bool { return r.open() == 0 })
}
