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
	Log         logr.Logger
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

func (r *Relay) dialTimeout() time.Duration {
	if r.DialTimeout > 0 {
		return r.DialTimeout
	}
	return 5 * time.Second
}

// Run listens on every mapping until ctx ends, then closes the listeners and
// waits for open connections to finish.
func (r *Relay) Run(ctx context.Context, started chan<- []net.Addr) error {
	var lns []net.Listener
	var addrs []net.Addr
	for _, m := range r.Mappings {
		ln, err := net.Listen("tcp", net.JoinHostPort(r.ListenHost, strconv.Itoa(m.Listen)))
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return fmt.Errorf("listening on port %d: %w", m.Listen, err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr())
	}
	if started != nil {
		started <- addrs
	}
	var wg sync.WaitGroup
	for i, ln := range lns {
		wg.Go(func() { r.serve(ctx, ln, r.Mappings[i].Doorman, &wg) })
	}
	<-ctx.Done()
	for _, ln := range lns {
		_ = ln.Close()
	}
	wg.Wait()
	return nil
}

func (r *Relay) serve(ctx context.Context, ln net.Listener, doormanPort int, wg *sync.WaitGroup) {
	target := net.JoinHostPort(r.DoormanHost, strconv.Itoa(doormanPort))
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				r.Log.Error(err, "Accepting a connection")
			}
			return
		}
		wg.Go(func() { r.pass(ctx, c, target) })
	}
}

func (r *Relay) pass(ctx context.Context, in net.Conn, target string) {
	defer in.Close()
	d := net.Dialer{Timeout: r.dialTimeout()}
	out, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		r.Log.Error(err, "Dialling the doorman", "target", target)
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	go func() { copyHalf(out, in); done <- struct{}{} }()
	go func() { copyHalf(in, out); done <- struct{}{} }()
	<-done
	<-done
}

// copyHalf copies src to dst (splice between TCP sockets on Linux), then
// passes the half-close on.
func copyHalf(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}
