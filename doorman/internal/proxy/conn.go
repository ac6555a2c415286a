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
	"slices"
	"sync"
	"syscall"
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
	// A Ready pod: straight there, waking nothing. While the workload is
	// pausing, only a request calls the pause off, so the connection is
	// classified first like a held one: a TCP check that connects and
	// closes (such as the operator's own listening check) or a known probe
	// is passed on or answered without waking anything.
	pausing := !removed && r.Workload.Phase == string(v1alpha1.PhasePausing)
	if eps := s.table.Endpoints(key); len(eps) > 0 && !pausing {
		if ok, _ := s.passing.take(s.passingKeys(src)); ok {
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
		// Closed at once, nothing sent: a request turned away, counted in
		// the pause's total as well as by the cap that refused it.
		s.metrics.Rejections.WithLabelValues(cap).Inc()
		s.metrics.Wakes.WithLabelValues(metrics.ResultTurnedAway).Inc()
		s.hooks.TurnedAway(r.Workload)
		_ = c.SetLinger(0)
		return nil
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
	t := s.termsFor(r)
	deadline := time.Now().Add(t.maxWait) // real time: it becomes a socket deadline
	key := r.Key()
	opts := classify.Options{ExtraAgents: s.cfg.ExtraAgents, Page: t.page, Ask: t.ask}

	silenceAt := time.Now().Add(s.cfg.Silence)
	var res classify.Result
	for {
		res = classify.Classify(h.buf, h.err != nil, opts)
		if res.Kind != classify.NeedMore {
			if h.err != nil && !res.Kind.Answered() {
				return nil // the caller left: never passed on, wakes nothing
			}
			break
		}
		err := h.readUntil(ctx, silenceAt)
		if isTimeout(err) {
			res = classify.Classify(h.buf, true, opts)
			break
		}
		if ctx.Err() != nil {
			return nil
		}
	}

	if res.Kind.Answered() {
		if eps := s.table.Endpoints(key); len(eps) > 0 && !removed {
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
// waking the workload when asked, then passes it on. It waits by reading
// from the caller (so a caller who leaves is let go at once) until the
// deadline or an interrupt from the endpoints table or a freed place: one
// goroutine per held connection, and no buffer while it is quiet.
func (s *Server) waitAndPass(ctx context.Context, h *heldConn, release func(), port int, r Route, removed bool, src netip.Addr, start, deadline time.Time, wake bool) {
	key := r.Key()
	if wake {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.wakeLoop(wctx, r, src, s.cfg.Clock.Now().Add(s.termsFor(r).maxWait))
	}
	var lastDialErr error
	var retryAt time.Time
	var failedOn []netip.AddrPort // the endpoints the last dials failed on
	for {
		eps, cancelWatch := s.table.Subscribe(key, h.interrupt)
		cancelFreed := func() {}
		until := deadline
		if len(eps) > 0 {
			// A retry waits out DialRetry, unless the Ready endpoints
			// changed since: a pod that turned Ready meanwhile is tried
			// at once.
			if time.Now().Before(retryAt) && slices.Equal(eps, failedOn) {
				until = minTime(retryAt, deadline)
			} else if ok, _ := s.passing.take(s.passingKeys(src)); ok {
				cancelWatch()
				err := s.pass(ctx, h.c, h, port, key, src, eps, func() {
					release()
					s.metrics.Wakes.WithLabelValues(metrics.ResultWoken).Inc()
					s.metrics.Wait.Observe(s.cfg.Clock.Since(start).Seconds())
				})
				if err == nil || errors.Is(err, errCallerLeft) {
					return
				}
				lastDialErr, failedOn = err, eps
				retryAt = time.Now().Add(s.cfg.DialRetry)
				continue
			} else {
				cancelFreed = s.onFreed(h.interrupt)
			}
		}
		err := h.readUntil(ctx, until)
		cancelWatch()
		cancelFreed()
		if err == nil || errors.Is(err, errInterrupted) || (isTimeout(err) && time.Now().Before(deadline)) {
			continue
		}
		if !isTimeout(err) {
			return // the caller left, or the doorman is closing
		}
		why := "no pod was Ready within maxWait"
		result := metrics.ResultTimedOut
		if lastDialErr != nil {
			why, result = fmt.Sprintf("the woken pods could not be reached: %v", lastDialErr), metrics.ResultFailed
		} else if len(eps) > 0 {
			why = "every passing place was taken until maxWait"
		}
		s.giveUp(r, result, start, why)
		return
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
		s.notifyFreed()
	}()
	j := &dialJob{ctx: ctx, eps: eps, port: port, h: h, done: make(chan struct{})}
	if err := s.dialOn(j); err != nil {
		return err
	}
	<-j.done
	if j.err != nil {
		return j.err
	}
	backend := j.backend
	defer s.untrack(backend)
	if h != nil {
		h.releaseBytes()
	}
	passed()
	s.metrics.Passing.Inc()
	defer s.metrics.Passing.Dec()
	s.pipe(ctx, c, backend)
	return nil
}

// dialJob is one connection's dial and replay, done by a dialler.
type dialJob struct {
	ctx  context.Context
	eps  []netip.AddrPort
	port int
	h    *heldConn // nil: nothing held, nothing to replay

	backend *net.TCPConn // the pod, tracked, the held bytes sent
	err     error
	done    chan struct{}
}

// diallerIdle is how long a dialler with nothing to do waits for more.
const diallerIdle = 10 * time.Second

// dialOn hands j to an idle dialler, or starts one while fewer than
// Config.Dialling run. A dialler dials one connection at a time, so at most
// Dialling dials are in flight. Diallers live on between connections: when
// a pod turns Ready with hundreds of callers held, a few goroutines whose
// stacks have already grown to what dialling needs do every dial, instead
// of each held caller's small waiting stack growing (and the process
// faulting in fresh stack memory) on the way to its first byte.
func (s *Server) dialOn(j *dialJob) error {
	select {
	case s.dialJobs <- j:
		return nil
	default:
	}
	select {
	case s.dialJobs <- j:
	case s.dialling <- struct{}{}:
		go s.dialler(j)
	case <-j.ctx.Done():
		return j.ctx.Err()
	}
	return nil
}

// dialler runs jobs until it has been idle for diallerIdle or the server
// has shut down.
func (s *Server) dialler(j *dialJob) {
	defer func() { <-s.dialling }()
	idle := time.NewTimer(diallerIdle)
	defer idle.Stop()
	for {
		j.backend, j.err = s.dialAndReplay(j)
		close(j.done)
		idle.Reset(diallerIdle)
		select {
		case j = <-s.dialJobs:
		case <-idle.C:
			return
		case <-s.stopped:
			return
		}
	}
}

// dialAndReplay connects to one of j's endpoints and sends it the held
// bytes, byte-exact. The caller is never passed on once it has left.
func (s *Server) dialAndReplay(j *dialJob) (_ *net.TCPConn, err error) {
	if err := j.ctx.Err(); err != nil {
		return nil, err
	}
	backend, err := s.dial(j.ctx, j.eps)
	if err != nil {
		return nil, err
	}
	if !s.track(backend, j.port) {
		_ = backend.Close()
		return nil, errCallerLeft
	}
	defer func() {
		if err != nil {
			s.untrack(backend)
		}
	}()
	if j.h == nil {
		return backend, nil
	}
	if !j.h.handOver() {
		return nil, errCallerLeft // never passed on
	}
	if len(j.h.buf) > 0 {
		if _, err := backend.Write(j.h.buf); err != nil {
			return nil, fmt.Errorf("replaying held bytes to %s: %w", backend.RemoteAddr(), err)
		}
	}
	return backend, nil
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

// wakeLoop wakes the route's workload, and every other paused workload
// routed for the same Service port ("Services shared with other
// workloads": every workload behind it paused, a request wakes them all),
// retrying every WakeRetry while a rate limit refuses or a patch fails,
// until each is woken or until. One request counts once against the rate
// limits, however many workloads it wakes.
func (s *Server) wakeLoop(ctx context.Context, r Route, src netip.Addr, until time.Time) {
	for {
		var pending []Workload
		for _, w := range s.sharing(r) {
			if s.wouldWake(w) {
				pending = append(pending, w)
			}
		}
		if len(pending) == 0 {
			return
		}
		if ok, cap := s.wakes.allow(src); !ok {
			s.metrics.Rejections.WithLabelValues(cap).Inc()
		} else {
			failed := false
			for _, w := range pending {
				if err := s.hooks.Wake(ctx, w, r.Service, src); err != nil {
					s.log.Error(err, "Waking", "workload", w.Key())
					failed = true
					continue
				}
				s.mu.Lock()
				s.lastWake[w.Key()] = woken{at: s.cfg.Clock.Now(), pausedAt: w.PausedAt}
				s.mu.Unlock()
			}
			if !failed {
				return
			}
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

// sharing returns r's workload, then the other workloads routed for the
// same Service port on this doorman's other ports, as they are now.
func (s *Server) sharing(r Route) []Workload {
	out := []Workload{r.Workload}
	key := r.Key()
	s.mu.Lock()
	defer s.mu.Unlock()
	for port, pl := range s.listeners {
		if port == r.DoormanPort || pl.removed || pl.route.Key() != key || pl.route.Workload.Key() == r.Workload.Key() {
			continue
		}
		out = append(out, pl.route.Workload)
	}
	return out
}

// terms are the wake settings a connection is held under.
type terms struct {
	ask, page bool
	maxWait   time.Duration
}

// termsFor returns the terms of a connection to r: its workload's, and
// for a Service shared by paused workloads (sharing) the strictest of
// theirs, so that no workload is woken in a way its own settings refuse.
// The connection asks if any of them asks, gets the waking-up page only
// if every one of them shows it, and waits the longest maxWait among
// them: a Ready pod of any of them serves it. A sharer that is Running
// is not waiting to be woken and has no say.
func (s *Server) termsFor(r Route) terms {
	t := terms{page: true}
	for _, w := range s.sharing(r) {
		if w.Key() != r.Workload.Key() && w.Phase == string(v1alpha1.PhaseRunning) {
			continue
		}
		t.ask = t.ask || (w.Ask && w.Phase != string(v1alpha1.PhaseResuming))
		t.page = t.page && w.Page
		t.maxWait = max(t.maxWait, w.maxWait())
	}
	return t
}

// woken is when this doorman last woke a workload, and the pause it woke.
type woken struct{ at, pausedAt time.Time }

// pauseWokenFor is how long a pause this doorman has woken stays woken in
// its eyes. Once the patch is accepted the operator has the request; the
// phase this doorman sees can lag behind for a few seconds, and another
// caller in them must not patch again and add a second WokenByRequest.
const pauseWokenFor = 5 * time.Minute

// wouldWake reports whether a wake now would wake a paused workload (or call
// a pause off): it is Paused or Pausing, and this doorman has neither just
// woken it nor already woken this pause of it.
func (s *Server) wouldWake(w Workload) bool {
	if w.Phase != string(v1alpha1.PhasePaused) && w.Phase != string(v1alpha1.PhasePausing) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if last, ok := s.lastWake[w.Key()]; ok {
		since := s.cfg.Clock.Since(last.at)
		if since < s.cfg.WakeRetry {
			return false
		}
		if !w.PausedAt.IsZero() && w.PausedAt.Equal(last.pausedAt) && since < pauseWokenFor {
			return false
		}
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

// heldConn is a held caller and the bytes read from it, within the byte
// budgets. Its own goroutine reads it; others only interrupt the read.
type heldConn struct {
	s   *Server
	c   *net.TCPConn
	rc  syscall.RawConn
	buf []byte
	err error // why the caller is gone: io.EOF when it closed

	counted int // bytes taken from the shared budget

	mu          sync.Mutex
	interrupted bool
	passed      bool
	poke        chan struct{}
}

// errInterrupted: a wait was cut short to look at the endpoints again.
var errInterrupted = errors.New("interrupted")

func (s *Server) newHeld(_ context.Context, c *net.TCPConn) *heldConn {
	h := &heldConn{s: s, c: c, poke: make(chan struct{}, 1)}
	rc, err := c.SyscallConn()
	if err != nil {
		h.err = err
	}
	h.rc = rc
	return h
}

// interrupt cuts the current or next wait short. It may be called from any
// goroutine, and does nothing once the connection was passed on.
func (h *heldConn) interrupt() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.passed {
		return
	}
	h.interrupted = true
	_ = h.c.SetReadDeadline(time.Unix(1, 0))
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

// takeInterrupt reports and clears a pending interrupt.
func (h *heldConn) takeInterrupt() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.interrupted
	h.interrupted = false
	select {
	case <-h.poke:
	default:
	}
	return was
}

// handOver ends holding: no interrupt touches the connection after it.
// It reports false when the caller has left.
func (h *heldConn) handOver() bool {
	h.mu.Lock()
	h.passed = true
	h.mu.Unlock()
	_ = h.c.SetReadDeadline(time.Time{})
	return h.err == nil
}

// room returns how many bytes the next read may take: the free bytes
// first, then the shared budget up to the per-connection cap. 0 means
// none now: the caller waits in the network.
func (h *heldConn) room() int {
	l := h.s.cfg.Limits
	n := len(h.buf)
	if n < l.FreeBytes {
		return min(readChunk, l.FreeBytes-n)
	}
	if n >= l.FreeBytes+l.ConnBytes {
		return 0
	}
	got := h.s.bytes.tryTake(min(readChunk, l.FreeBytes+l.ConnBytes-n))
	h.counted += got
	return got
}

// readUntil waits for the caller's next bytes (appended to buf) until
// deadline. It returns nil after a read, errInterrupted, a timeout error
// at the deadline, or why the caller is gone (also kept in err).
func (h *heldConn) readUntil(ctx context.Context, deadline time.Time) error {
	if h.err != nil {
		return h.err
	}
	want := h.room()
	if want == 0 {
		// No room to read: wait for an interrupt, freed bytes or the deadline.
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-h.poke:
			h.takeInterrupt()
			return errInterrupted
		case <-h.s.bytes.freedChan():
			return errInterrupted
		case <-t.C:
			return os.ErrDeadlineExceeded
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	_ = h.c.SetReadDeadline(deadline)
	if h.takeInterrupt() {
		h.s.bytes.give(h.unused(want))
		return errInterrupted
	}
	// Wait for bytes without a buffer: a held connection costs no read
	// buffer while its caller is quiet, only while reading.
	read := 0
	var rerr error
	err := h.rc.Read(func(fd uintptr) bool {
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
			h.buf = append(h.buf, (*bp)[:k]...)
			read = k
		}
		return true
	})
	h.s.bytes.give(h.unused(want - read))
	if err == nil {
		err = rerr
	}
	switch {
	case err == nil:
		return nil
	case isTimeout(err):
		if h.takeInterrupt() || time.Now().Before(deadline) {
			return errInterrupted
		}
		return err
	}
	h.err = err
	return err
}

// unused gives back n counted bytes a read did not use; it returns how many.
func (h *heldConn) unused(n int) int {
	l := h.s.cfg.Limits
	over := max(len(h.buf)+n-l.FreeBytes, 0) // the part of n that was counted
	back := min(n, over, h.counted)
	h.counted -= back
	return back
}

// readBufs lends read buffers only for the moment bytes are copied out.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

// stop is kept for the answer path: nothing reads in the background.
func (h *heldConn) stop() { _ = h.c.SetReadDeadline(time.Time{}) }

// releaseBytes gives the shared budget back once the bytes are replayed.
func (h *heldConn) releaseBytes() {
	n := h.counted
	h.counted = 0
	h.buf = nil
	h.s.bytes.give(n)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
