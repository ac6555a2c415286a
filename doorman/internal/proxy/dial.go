package proxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"napwake.dev/doorman/internal/addr"
)

// Dialer returns the doorman's plain TCP dial, what New uses when
// Config.Dial is nil (tests that map pod addresses wrap it). Its connect(2)
// blocks, for at most timeout (SO_SNDTIMEO), and the socket goes back to
// non-blocking before anything reads or writes it.
//
// Why: a pod on the node network answers a SYN within microseconds, often
// inside the connect call itself, yet a non-blocking connect returns
// EINPROGRESS and Go parks the goroutine until its netpoller reports the
// socket writable. While hundreds of held callers are being passed on,
// the scheduler has runnable goroutines at every turn, and it looks at the
// netpoller only when it runs out of them or when sysmon does, every
// 10 ms: in a fresh doorman passing 256 callers on, 64 connects finished
// in microseconds sat unseen for 14 ms. Blocking, the dialler has its
// answer when connect returns. Measured again once the descriptor table
// was grown at start (package fdtable), which removed the larger stall:
// p50 from a Ready pod to the first byte, 50 held, 1.5–1.8 ms blocking
// against 2.0–2.4 ms with Go's own dial; 256 held, 5.6 against 6.1–7.7 ms.
//
// Not Dialer.DialTCP: given the zero local address it still binds before
// connecting, and a bind picks its port the slow way, which cost 90% of
// passing 256 held callers on at once.
func Dialer(timeout time.Duration) func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	d := net.Dialer{Timeout: timeout, Control: func(_, _ string, rc syscall.RawConn) error {
		return control(rc, func(fd int) error {
			if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
				return err
			}
			return unix.SetNonblock(fd, false)
		})
	}}
	return func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
		conn, err := d.DialContext(ctx, "tcp", ap.String())
		if err != nil {
			return nil, err
		}
		c := conn.(*net.TCPConn)
		rc, err := c.SyscallConn()
		if err == nil {
			err = control(rc, func(fd int) error { return unix.SetNonblock(fd, true) })
		}
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	}
}

func control(rc syscall.RawConn, fn func(fd int) error) error {
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// dialPool is the diallers a connection hands its dial and replay to
// (dialAndReplay). At most Config.Dialling dial at once, and at most three
// quarters of them (perKey) for one Service port: a workload whose pods
// drop SYNs keeps each of its dials for the whole dial timeout, and must
// not take every dialler from the other workloads' callers, while one
// workload woken with hundreds held still gets nearly all. Diallers live on
// between connections: when a pod turns Ready with hundreds of callers
// held, a few goroutines whose stacks have already grown to what dialling
// needs do every dial, instead of each held caller's small waiting stack
// growing (and the process faulting in fresh stack memory) on the way to
// its first byte.
type dialPool struct {
	rules addr.Rules
	dial  func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error)

	places   chan struct{} // a place for each dialler
	jobs     chan *conn    // taken by idle diallers
	stopped  chan struct{} // closed by stop: diallers end
	stopOnce sync.Once

	perKey int
	mu     sync.Mutex
	keys   map[ServiceKey]*keyShare // only keys with a dial waiting or in flight
}

// keyShare is one Service port's share of the diallers.
type keyShare struct {
	slots chan struct{} // perKey places
	users int           // dials waiting for or holding a slot
}

func newDialPool(cfg *Config) *dialPool {
	return &dialPool{rules: cfg.Rules, dial: cfg.Dial,
		places: make(chan struct{}, cfg.Dialling), jobs: make(chan *conn), stopped: make(chan struct{}),
		perKey: max(1, cfg.Dialling-cfg.Dialling/4), keys: map[ServiceKey]*keyShare{}}
}

// share returns k's share, counting one more user.
func (p *dialPool) share(k ServiceKey) *keyShare {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.keys[k]
	if s == nil {
		s = &keyShare{slots: make(chan struct{}, p.perKey)}
		p.keys[k] = s
	}
	s.users++
	return s
}

// leave counts one user of k's share fewer, forgetting the share when
// nobody uses it, so the map holds only keys dialling now.
func (p *dialPool) leave(k ServiceKey, s *keyShare) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.users--; s.users == 0 && p.keys[k] == s {
		delete(p.keys, k)
	}
}

// diallerIdle is how long a dialler with nothing to do waits for more.
const diallerIdle = 10 * time.Second

// run takes a slot of c's Service port's share, then hands c to an idle
// dialler, or starts one while a place is free. The dialler runs
// c.dialAndReplay, gives the slot back, then sends on c.dialled.
func (p *dialPool) run(ctx context.Context, c *conn) error {
	k := c.route.Key()
	s := p.share(k)
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		p.leave(k, s)
		return ctx.Err()
	}
	c.release = func() { <-s.slots; p.leave(k, s) }
	select {
	case p.jobs <- c:
		return nil
	default:
	}
	select {
	case p.jobs <- c:
	case p.places <- struct{}{}:
		go p.dialler(c)
	case <-ctx.Done():
		c.release()
		return ctx.Err()
	}
	return nil
}

// dialler runs jobs until it has been idle for diallerIdle or the pool
// has stopped.
func (p *dialPool) dialler(c *conn) {
	defer func() { <-p.places }()
	idle := time.NewTimer(diallerIdle)
	defer idle.Stop()
	for {
		c.backend, c.dialErr = c.dialAndReplay()
		c.release()
		c.dialled <- struct{}{}
		idle.Reset(diallerIdle)
		select {
		case c = <-p.jobs:
		case <-idle.C:
			return
		case <-p.stopped:
			return
		}
	}
}

// stop ends the diallers once their jobs are done.
func (p *dialPool) stop() { p.stopOnce.Do(func() { close(p.stopped) }) }

// dialAny connects to one of eps, in random order, that the dial rules allow.
func (p *dialPool) dialAny(ctx context.Context, eps []netip.AddrPort) (*net.TCPConn, error) {
	var errs []error
	for _, i := range rand.Perm(len(eps)) {
		ep := eps[i]
		if err := p.rules.CheckAddrPort(ep); err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := p.dial(ctx, ep)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return c, nil
	}
	if len(errs) == 0 {
		return nil, errors.New("no endpoint")
	}
	return nil, fmt.Errorf("dialling Ready endpoints: %w", errors.Join(errs...))
}
