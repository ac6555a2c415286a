// Package relay is the NEG forwarder's data path: it accepts connections on
// the workload's target ports and passes each, bytes untouched, to the
// doorman's port for that route.
//
// It must not read or change the bytes it relays, nor talk to the API server.
package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// Mapping sends connections arriving on Listen to the doorman's port Doorman.
type Mapping struct {
	Listen  int
	Doorman int
}

// ParseMapping reads "LISTEN=DOORMAN", such as "8080=20017".
func ParseMapping(s string) (Mapping, error) {
	l, d, ok := strings.Cut(s, "=")
	if !ok {
		return Mapping{}, fmt.Errorf("mapping %q: want LISTEN=DOORMAN, such as 8080=20017", s)
	}
	lp, err := port(l)
	if err != nil {
		return Mapping{}, fmt.Errorf("mapping %q: listen port: %w", s, err)
	}
	dp, err := port(d)
	if err != nil {
		return Mapping{}, fmt.Errorf("mapping %q: doorman port: %w", s, err)
	}
	return Mapping{Listen: lp, Doorman: dp}, nil
}

func port(s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%q is not a port from 1 to 65535", s)
	}
	return p, nil
}

// Relay forwards every mapping to DoormanHost.
type Relay struct {
	// DoormanHost is the doorman's headless Service name or an address.
	DoormanHost string
	// ListenHost is the address to listen on; empty means every address.
	ListenHost string
	Mappings   []Mapping
	// DialTimeout bounds each dial to the doorman.
	DialTimeout time.Duration
	// IdleTimeout closes a relayed connection that has carried nothing
	// either way for that long, so a caller that vanished without a word
	// frees its sockets here and at the doorman; pings keep it open.
	// Default DefaultIdleTimeout, as the doorman's (docs/compatibility.md).
	IdleTimeout time.Duration
	Log         logr.Logger

	// mu guards lns, conns and closing; wg counts the accept loops and the
	// relayed connections.
	mu      sync.Mutex
	lns     []net.Listener
	conns   map[net.Conn]struct{}
	closing bool
	wg      sync.WaitGroup
	// listen opens a listener; net.Listen unless a test stands in.
	listen func(network, address string) (net.Listener, error)
}

// Ready reports whether the doorman answers on every mapped port.
func (r *Relay) Ready(ctx context.Context) error {
	d := net.Dialer{Timeout: r.dialTimeout()}
	for _, m := range r.Mappings {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(r.DoormanHost, strconv.Itoa(m.Doorman)))
		if err != nil {
			return fmt.Errorf("reaching the doorman on port %d: %w", m.Doorman, err)
		}
		_ = c.Close()
	}
	return nil
}

// DefaultIdleTimeout is the doorman's own limit on a passed-through
// connection that carries nothing.
const DefaultIdleTimeout = 10 * time.Minute

func (r *Relay) idleTimeout() time.Duration {
	if r.IdleTimeout > 0 {
		return r.IdleTimeout
	}
	return DefaultIdleTimeout
}

func (r *Relay) dialTimeout() time.Duration {
	if r.DialTimeout > 0 {
		return r.DialTimeout
	}
	return 5 * time.Second
}

// Listen opens a listener for every mapping and starts accepting; the
// addresses come back in mapping order. Connections are relayed until
// Shutdown.
func (r *Relay) Listen() ([]net.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		r.conns = map[net.Conn]struct{}{}
	}
	var addrs []net.Addr
	for _, m := range r.Mappings {
		listen := r.listen
		if listen == nil {
			listen = net.Listen
		}
		ln, err := listen("tcp", net.JoinHostPort(r.ListenHost, strconv.Itoa(m.Listen)))
		if err != nil {
			for _, l := range r.lns {
				_ = l.Close()
			}
			r.lns = nil
			return nil, fmt.Errorf("listening on port %d: %w", m.Listen, err)
		}
		r.lns = append(r.lns, ln)
		addrs = append(addrs, ln.Addr())
	}
	for i, ln := range r.lns {
		r.wg.Add(1)
		go r.serve(ln, r.Mappings[i].Doorman)
	}
	return addrs, nil
}

// Shutdown stops accepting at once, then gives open connections until ctx
// ends to finish and closes what is left, as the doorman does.
func (r *Relay) Shutdown(ctx context.Context) {
	r.mu.Lock()
	r.closing = true
	for _, ln := range r.lns {
		_ = ln.Close()
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	r.mu.Lock()
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	<-done
}

// Accept backoff after an error such as EMFILE: doubling from
// acceptBackoffMin up to acceptBackoffMax, reset by a good accept.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

func (r *Relay) serve(ln net.Listener, doormanPort int) {
	defer r.wg.Done()
	target := net.JoinHostPort(r.DoormanHost, strconv.Itoa(doormanPort))
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || r.isClosing() {
				return
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			r.Log.Error(err, "Accepting a connection; accepting again", "port", ln.Addr().String(), "after", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !r.track(c) {
			_ = c.Close()
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.untrack(c)
			r.pass(c, target)
		}()
	}
}

// open is how many connections (callers' and the doorman's) are open.
func (r *Relay) open() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}

func (r *Relay) isClosing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closing
}

func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	_ = c.Close()
}

// pass relays one caller's connection to the doorman until both directions
// end, or until it has carried nothing either way for IdleTimeout. A
// doorman that cannot be reached resets the caller, as a closed port
// would.
func (r *Relay) pass(in net.Conn, target string) {
	d := net.Dialer{Timeout: r.dialTimeout()}
	out, err := d.Dial("tcp", target)
	if err != nil {
		r.Log.Error(err, "Dialling the doorman", "target", target)
		if tc, ok := in.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		return
	}
	r.mu.Lock()
	r.conns[out] = struct{}{}
	r.mu.Unlock()
	defer r.untrack(out)
	stop := closeWhenIdle(in, out, r.idleTimeout())
	defer stop()
	done := make(chan struct{}, 2)
	go func() { copyHalf(out, in); done <- struct{}{} }()
	go func() { copyHalf(in, out); done <- struct{}{} }()
	<-done
	<-done
}

// copyHalf copies src to dst (splice between TCP sockets on Linux), then
// passes the half-close on. A read error (a reset) closes dst for good, so
// the other side sees the end too.
func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	tc, ok := dst.(*net.TCPConn)
	switch {
	case err != nil:
		if ok {
			_ = tc.SetLinger(0)
		}
		_ = dst.Close()
	case ok:
		_ = tc.CloseWrite()
	}
}

// closeWhenIdle ends both connections once neither has carried data
// either way for idle, read from the kernel's TCP_INFO so the splice path
// counts no bytes. It shuts both down rather than closing them: the copies
// see a clean end and pass it on, so each peer gets a FIN, not a reset.
// It looks every idle/10 (at least every 10 ms), on a timer rather than a
// goroutine of its own; stop ends the looking.
func closeWhenIdle(a, b net.Conn, idle time.Duration) (stop func()) {
	ta, okA := a.(*net.TCPConn)
	tb, okB := b.(*net.TCPConn)
	if !okA || !okB {
		return func() {}
	}
	check := max(idle/10, 10*time.Millisecond)
	var mu sync.Mutex
	var t *time.Timer
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(check, func() {
		if idleFor(ta) >= idle && idleFor(tb) >= idle {
			// Both write sides first: a peer answering the FIN it is
			// sent (an echo, an HTTP server flushing a reply) must not
			// reach the other end, which is being told the connection
			// is over. Shutting one end's read first let such an answer
			// through before the other end's FIN.
			_ = ta.CloseWrite()
			_ = tb.CloseWrite()
			_ = ta.CloseRead()
			_ = tb.CloseRead()
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if t != nil {
			t.Reset(check)
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		t.Stop()
		t = nil
	}
}

// idleFor is how long c has carried no data either way; 0 (never idle)
// when the kernel cannot tell.
func idleFor(c *net.TCPConn) time.Duration {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		return 0
	}
	return time.Duration(min(info.Last_data_recv, info.Last_data_sent)) * time.Millisecond
}
