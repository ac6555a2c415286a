package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	v1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/classify"
	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/doorman/internal/page"
)

// readChunk is how much one read of a held caller asks for.
const readChunk = 4 << 10

// handle serves one connection to a doorman port. When the connection is
// to be held for a Ready pod, it returns the wait as a continuation, which
// the caller runs on a fresh goroutine: the classifying goroutine's stack
// grew, and a long wait on a small stack keeps a held connection cheap.
func (s *Server) handle(ctx context.Context, c *net.TCPConn, port int, r Route, removed bool) (wait func()) {
	src := remoteAddr(c)
	key := r.Key()
	// A Ready pod: straight there, waking nothing, unless it is pausing.
	if eps, _ := s.table.Endpoints(key); len(eps) > 0 {
		if ok, _ := s.passing.take(s.passingKeys(src)); ok {
			if !removed && r.Workload.Phase == string(v1alpha1.PhasePausing) {
				go s.wakeLoop(ctx, r, src, s.cfg.Clock.Now().Add(r.Workload.maxWait()))
			}
			err := s.pass(ctx, c, nil, port, key, src, eps, func() {
				s.metrics.Wakes.WithLabelValues(metrics.ResultPassed).Inc()
			})
			if err == nil || errors.Is(err, errCallerLeft) {
				return nil
			}
			// No endpoint answered: hold it like any other.
		}
	}
	keys := s.heldKeys(src, r.Workload)
	if ok, cap := s.held.take(keys); !ok {
		s.metrics.Rejections.WithLabelValues(cap).Inc()
		_ = c.SetLinger(0)
		return nil // closed at once, nothing sent
	}
	s.metrics.Held.Inc()
	h := s.newHeld(ctx, c)
	released := false
	release := func() {
		if !released {
			released = true
			s.held.give(keys)
			s.metrics.Held.Dec()
		}
	}
	cleanup := func() {
		h.stop()
		h.releaseBytes()
		release()
	}
	next := s.hold(ctx, h, release, port, r, removed, src)
	if next == nil {
		cleanup()
		return nil
	}
	return func() {
		defer cleanup()
		next()
	}
}

// hold classifies a held connection, then answers it or waits for a Ready
// pod and passes it on.
func (s *Server) hold(ctx context.Context, h *heldConn, release func(), port int, r Route, removed bool, src netip.Addr) (wait func()) {
	start := s.cfg.Clock.Now()
	deadline := start.Add(r.Workload.maxWait())
	key := r.Key()
	w := r.Workload
	opts := classify.Options{ExtraAgents: s.cfg.ExtraAgents, Page: w.Page,
		Ask: w.Ask && w.Phase != string(v1alpha1.PhaseResuming)}

	silence := time.NewTimer(s.cfg.Silence)
	defer silence.Stop()
	var res classify.Result
	for {
		buf, err, more := h.snapshot()
		final := err != nil
		res = classify.Classify(buf, final, opts)
		if res.Kind != classify.NeedMore {
			if err != nil && !res.Kind.Answered() {
				return nil // the caller left: never passed on, wakes nothing
			}
			break
		}
		// A pod may turn Ready while the caller is still sending: checkers
		// are answered only while none is, so keep watching.
		select {
		case <-more:
		case <-silence.C:
			res = classify.Classify(buf, true, opts)
		case <-ctx.Done():
			return nil
		}
		if res.Kind != classify.NeedMore {
			break
		}
	}

	if res.Kind.Answered() {
		if eps, _ := s.table.Endpoints(key); len(eps) > 0 && !removed {
			// Checkers get answers only while no pod is Ready.
			return func() { s.waitAndPass(ctx, h, release, port, r, removed, src, start, deadline, false) }
		}
		s.answer(ctx, h, res, r, src, removed)
		return nil
	}
	return func() { s.waitAndPass(ctx, h, release, port, r, removed, src, start, deadline, !removed) }
}

// answer sends the doorman's own answer and closes.
func (s *Server) answer(ctx context.Context, h *heldConn, res classify.Result, r Route, src netip.Addr, removed bool) {
	head := res.Method == "HEAD"
	var out []byte
	switch res.Kind {
	case classify.Probe:
		out = page.Probe(head)
	case classify.GoogleHC:
		out = page.GoogleHC(head)
	case classify.HiddenFile:
		out = page.NotFound(head)
	case classify.Asleep:
		out = page.Asleep(res.WantsJSON, head)
	case classify.Browser:
		wp := page.Waking{Host: res.Host, Path: res.Path, Head: head}
		if w := r.Workload; w.Phase == string(v1alpha1.PhaseResuming) && !w.ResumedAt.IsZero() {
			d := max(s.cfg.Clock.Since(w.ResumedAt), 0)
			wp.Starting = &d
		}
		out = wp.Render()
		if !removed {
			go s.wakeLoop(ctx, r, src, s.cfg.Clock.Now().Add(s.cfg.WakeRetry))
		}
	}
	if res.Kind.TurnedAway() {
		s.metrics.Wakes.WithLabelValues(metrics.ResultTurnedAway).Inc()
		s.hooks.TurnedAway(r.Workload)
	}
	h.stop()
	if len(out) > 0 {
		_ = h.c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		_, _ = h.c.Write(out)
		_ = h.c.CloseWrite()
		// Read what the caller still sends for a moment, so closing with
		// unread bytes doesn't reset the connection before it reads the answer.
		_ = h.c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		var sink [512]byte
		for i := 0; i < 64; i++ {
			if _, err := h.c.Read(sink[:]); err != nil {
				break
			}
		}
	}
}

// waitAndPass holds the connection until a Ready pod and a passing place,
// waking the workload when asked, then passes it on.
func (s *Server) waitAndPass(ctx context.Context, h *heldConn, release func(), port int, r Route, removed bool, src netip.Addr, start, deadline time.Time, wake bool) {
	key := r.Key()
	if wake {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.wakeLoop(wctx, r, src, deadline)
	}
	waitTimer := s.cfg.Clock.NewTimer(deadline.Sub(s.cfg.Clock.Now()))
	defer waitTimer.Stop()
	var lastDialErr error
	for {
		eps, changed := s.table.Endpoints(key)
		s.mu.Lock()
		freed := s.freed
		s.mu.Unlock()
		if len(eps) > 0 {
			if ok, _ := s.passing.take(s.passingKeys(src)); ok {
				err := s.pass(ctx, h.c, h, port, key, src, eps, func() {
					release()
					s.metrics.Wakes.WithLabelValues(metrics.ResultWoken).Inc()
					s.metrics.Wait.Observe(s.cfg.Clock.Since(start).Seconds())
				})
				if err == nil {
					return
				}
				if errors.Is(err, errCallerLeft) {
					return
				}
				lastDialErr = err
				retry := s.cfg.Clock.NewTimer(s.cfg.DialRetry)
				select {
				case <-retry.C():
				case <-waitTimer.C():
					retry.Stop()
					s.giveUp(r, metrics.ResultFailed, start, fmt.Sprintf("the woken pods could not be reached: %v", lastDialErr))
					return
				case <-ctx.Done():
					retry.Stop()
					return
				}
				continue
			}
		}
		_, err, more := h.snapshot()
		if err != nil {
			return // the caller left
		}
		select {
		case <-changed:
		case <-freed:
		case <-more:
		case <-waitTimer.C():
			why := "no pod was Ready within maxWait"
			result := metrics.ResultTimedOut
			if lastDialErr != nil {
				why, result = fmt.Sprintf("the woken pods could not be reached: %v", lastDialErr), metrics.ResultFailed
			} else if len(eps) > 0 {
				why = "every passing place was taken until maxWait"
			}
			s.giveUp(r, result, start, why)
			return
		case <-ctx.Done():
			return
		}
	}
}

func (s *Server) giveUp(r Route, result string, start time.Time, why string) {
	s.metrics.Wakes.WithLabelValues(result).Inc()
	s.hooks.NotServed(r.Workload, r.Service, s.cfg.Clock.Since(start), why)
}

// errCallerLeft: the caller closed before it could be passed on.
var errCallerLeft = errors.New("caller left")

// pass dials a Ready endpoint, replays the held bytes and copies both ways.
// It owns the passing place taken for src and gives it back. A nil error
// means the connection was passed on.
func (s *Server) pass(ctx context.Context, c *net.TCPConn, h *heldConn, port int, key ServiceKey, src netip.Addr, eps []netip.AddrPort, passed func()) error {
	pkeys := s.passingKeys(src)
	defer func() {
		s.passing.give(pkeys)
		s.mu.Lock()
		close(s.freed)
		s.freed = make(chan struct{})
		s.mu.Unlock()
	}()
	backend, err := s.dial(ctx, eps)
	if err != nil {
		return err
	}
	if !s.track(backend, port) {
		_ = backend.Close()
		return errCallerLeft
	}
	defer s.untrack(backend)
	var replay []byte
	if h != nil {
		h.stop()
		buf, rerr, _ := h.snapshot()
		if rerr != nil {
			return errCallerLeft // never passed on
		}
		replay = buf
	}
	if len(replay) > 0 {
		if _, err := backend.Write(replay); err != nil {
			return fmt.Errorf("replaying held bytes to %s: %w", backend.RemoteAddr(), err)
		}
	}
	if h != nil {
		h.releaseBytes()
	}
	passed()
	s.metrics.Passing.Inc()
	defer s.metrics.Passing.Dec()
	s.pipe(ctx, c, backend)
	return nil
}

// dial connects to one of eps, in random order, that the dial rules allow.
func (s *Server) dial(ctx context.Context, eps []netip.AddrPort) (*net.TCPConn, error) {
	var errs []error
	for _, i := range rand.Perm(len(eps)) {
		ep := eps[i]
		if err := s.cfg.Rules.CheckAddrPort(ep); err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := s.cfg.Dial(ctx, ep)
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

// wakeLoop wakes the workload, retrying every WakeRetry while a rate limit
// refuses or the patch fails, until it succeeds or until.
func (s *Server) wakeLoop(ctx context.Context, r Route, src netip.Addr, until time.Time) {
	w := r.Workload
	for {
		if !s.wouldWake(w) {
			return
		}
		if ok, cap := s.wakes.allow(src); !ok {
			s.metrics.Rejections.WithLabelValues(cap).Inc()
		} else if err := s.hooks.Wake(ctx, w, r.Service, src); err == nil {
			s.mu.Lock()
			s.lastWake[w.Key()] = s.cfg.Clock.Now()
			s.mu.Unlock()
			return
		} else {
			s.log.Error(err, "Waking", "workload", w.Key())
		}
		if !s.cfg.Clock.Now().Add(s.cfg.WakeRetry).Before(until) {
			return
		}
		t := s.cfg.Clock.NewTimer(s.cfg.WakeRetry)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// wouldWake reports whether a wake now would wake a paused workload (or call
// a pause off): it is Paused or Pausing and this doorman hasn't just woken it.
func (s *Server) wouldWake(w Workload) bool {
	if w.Phase != string(v1alpha1.PhasePaused) && w.Phase != string(v1alpha1.PhasePausing) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last, ok := s.lastWake[w.Key()]
	if ok && s.cfg.Clock.Since(last) < s.cfg.WakeRetry {
		return false
	}
	if len(s.lastWake) > maxSources {
		clear(s.lastWake)
	}
	return true
}

func (w Workload) maxWait() time.Duration {
	if w.MaxWait <= 0 {
		return 2 * time.Minute
	}
	return w.MaxWait
}

func remoteAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// heldConn reads a held caller's bytes in the background, within the byte
// budgets, so a caller who gives up is let go at once.
type heldConn struct {
	s    *Server
	c    *net.TCPConn
	ctx  context.Context
	quit chan struct{}
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	buf     []byte
	err     error
	more    chan struct{}
	counted int // bytes taken from the shared budget
}

func (s *Server) newHeld(ctx context.Context, c *net.TCPConn) *heldConn {
	h := &heldConn{s: s, c: c, ctx: ctx, quit: make(chan struct{}), done: make(chan struct{}), more: make(chan struct{})}
	go h.read()
	return h
}

// snapshot returns the bytes so far, the read error (io.EOF when the caller
// closed) and a channel closed when either changes.
func (h *heldConn) snapshot() ([]byte, error, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf, h.err, h.more
}

func (h *heldConn) read() {
	defer close(h.done)
	l := h.s.cfg.Limits
	rc, err := h.c.SyscallConn()
	if err != nil {
		h.fail(err)
		return
	}
	for {
		// Room: the free bytes first, then the shared budget, up to the
		// per-connection cap; beyond it the caller waits in the network.
		h.mu.Lock()
		n := len(h.buf)
		h.mu.Unlock()
		want := readChunk
		if n >= l.FreeBytes+l.ConnBytes {
			<-h.quit
			return
		}
		if n >= l.FreeBytes {
			want = min(want, l.FreeBytes+l.ConnBytes-n)
			got := h.s.bytes.take(h.ctx, h.quit, want)
			if got == 0 {
				return
			}
			h.mu.Lock()
			h.counted += got
			h.mu.Unlock()
			want = got
		} else {
			want = min(want, l.FreeBytes-n)
		}
		// Wait for bytes without a buffer: a held connection costs no
		// read buffer while its caller is quiet, only while reading.
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			bp := readBufs.Get().(*[]byte)
			defer readBufs.Put(bp)
			k, e := unix.Read(int(fd), (*bp)[:want])
			if e == unix.EAGAIN || e == unix.EINTR {
				return false
			}
			switch {
			case e != nil:
				rerr = e
			case k == 0:
				rerr = io.EOF
			default:
				h.mu.Lock()
				h.buf = append(h.buf, (*bp)[:k]...)
				h.mu.Unlock()
			}
			return true
		})
		if err == nil {
			err = rerr
		}
		if err != nil && isTimeout(err) {
			return // stop() interrupted the wait
		}
		h.fail(err)
		if err != nil {
			return
		}
	}
}

// readBufs lends read buffers only for the moment bytes are copied out.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

// fail records err (nil: new bytes) and wakes the handler.
func (h *heldConn) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil && h.err == nil {
		h.err = err
	}
	close(h.more)
	h.more = make(chan struct{})
}

// stop ends the background reads and waits for them; the bytes read stay.
func (h *heldConn) stop() {
	h.once.Do(func() {
		close(h.quit)
		_ = h.c.SetReadDeadline(time.Unix(1, 0))
		<-h.done
		_ = h.c.SetReadDeadline(time.Time{})
	})
}

// releaseBytes gives the shared budget back once the bytes are replayed.
func (h *heldConn) releaseBytes() {
	h.mu.Lock()
	n := h.counted
	h.counted = 0
	h.buf = nil
	h.mu.Unlock()
	h.s.bytes.give(n)
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
