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
// blocks for at most connectBlock (SO_SNDTIMEO); a pod that has not
// answered by then is waited for in the netpoller, which ends the dial
// at timeout, or as soon as ctx ends: a caller that leaves, or whose
// maxWait runs out, frees its dialler at once, even from a pod that drops
// SYNs. The socket goes back to non-blocking before anything reads or
// writes it.
//
// Why block at all: a pod on the node network answers a SYN within
// microseconds, often inside the connect call itself, yet a non-blocking
// connect returns EINPROGRESS and Go parks the goroutine until its
// netpoller reports the socket writable. While hundreds of held callers
// are being passed on, the scheduler has runnable goroutines at every
// turn, and it looks at the netpoller only when it runs out of them or
// when sysmon does, every 10 ms: in a fresh doorman passing 256 callers
// on, 64 connects finished in microseconds sat unseen for 14 ms. Blocking,
// the dialler has its answer when connect returns. Measured again once the
// descriptor table was grown at start (package fdtable), which removed the
// larger stall: p50 from a Ready pod to the first byte, 50 held, 1.5–1.8 ms
// blocking against 2.0–2.4 ms with Go's own dial; 256 held, 5.6 against
// 6.1–7.7 ms. A connect that blocks past connectBlock returns EINPROGRESS
// and goes on in the kernel, as a non-blocking one does.
//
// Not Dialer.DialTCP: given the zero local address it still binds before
// connecting, and a bind picks its port the slow way, which cost 90% of
// passing 256 held callers on at once.
func Dialer(timeout time.Duration) func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
	tv := unix.NsecToTimeval(min(timeout, connectBlock).Nanoseconds())
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

// connectBlock is how long the default dial's connect(2) blocks before it
// waits in the netpoller: far longer than a pod that answers at all takes
// to, and short enough that a dial to a pod dropping SYNs is soon one ctx
// can end.
const connectBlock = 10 * time.Millisecond

func control(rc syscall.RawConn, fn func(fd int) error) error {
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// dialPool is the diallers a connection being passed on hands its connect
// to (connect); only the connect: the held bytes are replayed by the
// connection's own goroutine (conn.replay), so a pod that reads slowly
// holds up its own callers and no dialler. At most Config.Dialling dial at
// once, at most half of them (perWorkload) for one workload and three
// quarters (perNamespace) for one namespace: a workload whose pods drop
// SYNs, on however many Service ports, or a tenant with several, keeps
// each of its dials until the caller's maxWait, the caller leaving or the
// dial timeout, and must not take every dialler from the other tenants'
// callers, while one workload woken with hundreds held still gets many
// (docs/security.md). Diallers live on between connections: when a pod
// turns Ready with hundreds of callers held, a few goroutines whose stacks
// have already grown to what dialling needs do every dial, instead of each
// held caller's small waiting stack growing (and the process faulting in
// fresh stack memory) on the way to its first byte.
type dialPool struct {
	rules addr.Rules
	dial  func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error)

	places   chan struct{} // a place for each dialler
	jobs     chan *dialJob // taken by idle diallers
	stopped  chan struct{} // closed by stop: diallers end
	stopOnce sync.Once

	perWorkload, perNamespace int
	mu                        sync.Mutex
	shares                    map[string]*share // only keys with a dial waiting or in flight
}

// share is one workload's or one namespace's share of the diallers.
type share struct {
	slots chan struct{} // its places
	users int           // dials waiting for or holding a slot
}

// dialJob is one connect handed to a dialler: done is closed once conn
// or err is set.
type dialJob struct {
	ctx  context.Context
	eps  []netip.AddrPort
	conn *net.TCPConn
	err  error
	done chan struct{}
}

func newDialPool(cfg *Config) *dialPool {
	return &dialPool{rules: cfg.Rules, dial: cfg.Dial,
		places: make(chan struct{}, cfg.Dialling), jobs: make(chan *dialJob), stopped: make(chan struct{}),
		perWorkload: max(1, cfg.Dialling/2), perNamespace: max(1, cfg.Dialling-cfg.Dialling/4),
		shares: map[string]*share{}}
}

// take takes a slot of key's share (of size n), counting one more user,
// until ctx ends.
func (p *dialPool) take(ctx context.Context, key string, n int) (release func(), err error) {
	p.mu.Lock()
	s := p.shares[key]
	if s == nil {
		s = &share{slots: make(chan struct{}, n)}
		p.shares[key] = s
	}
	s.users++
	p.mu.Unlock()
	leave := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if s.users--; s.users == 0 && p.shares[key] == s {
			delete(p.shares, key)
		}
	}
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

// diallerIdle is how long a dialler with nothing to do waits for more.
const diallerIdle = 10 * time.Second

// connect connects to one of eps (dialAny) on a dialler, within w's and
// its namespace's shares, until ctx ends: every wait, for a slot, a
// dialler or the connect itself, ends with it.
func (p *dialPool) connect(ctx context.Context, w Workload, eps []netip.AddrPort) (*net.TCPConn, error) {
	// Always the workload's first, then its namespace's: no two dials
	// wait for each other's.
	releaseW, err := p.take(ctx, "w|"+w.Key(), p.perWorkload)
	if err != nil {
		return nil, err
	}
	defer releaseW()
	releaseNS, err := p.take(ctx, "n|"+w.Namespace, p.perNamespace)
	if err != nil {
		return nil, err
	}
	defer releaseNS()
	j := &dialJob{ctx: ctx, eps: eps, done: make(chan struct{})}
	select {
	case p.jobs <- j:
	default:
		select {
		case p.jobs <- j:
		case p.places <- struct{}{}:
			go p.dialler(j)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	<-j.done // the dial ends with ctx
	return j.conn, j.err
}

// dialler runs jobs until it has been idle for diallerIdle or the pool
// has stopped.
func (p *dialPool) dialler(j *dialJob) {
	defer func() { <-p.places }()
	idle := time.NewTimer(diallerIdle)
	defer idle.Stop()
	for {
		j.conn, j.err = p.dialAny(j.ctx, j.eps)
		close(j.done)
		idle.Reset(diallerIdle)
		select {
		case j = <-p.jobs:
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
		if err := ctx.Err(); err != nil {
			return nil, err
		}
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
