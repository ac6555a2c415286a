package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/ask"
	"napwake.dev/doorman/internal/classify"
	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/doorman/internal/page"
)

// conn is one caller's connection to a doorman port, from accept to close:
// the facts every stage needs, and the stages as methods. serve decides
// (policy.go), classifies and answers; waitAndPass waits for a Ready pod
// and a passing place and passes the connection on.
//
// Who owns it, and the bytes held from the caller (buf), at each moment:
//
//  1. serve runs on the goroutine the accept loop started for it
//     (Server.serveConn), which owns everything while it decides, reads
//     and classifies, and answers.
//  2. A connection to be held is handed whole to a fresh goroutine, which
//     runs waitAndPass: the classifying goroutine's stack grew, and a long
//     wait on a small stack keeps a held connection cheap. The first
//     goroutine ends without touching it again.
//  3. A dialler (dialPool) only connects to the pod, for the holding
//     goroutine, which then replays the held bytes itself (replay), drops
//     them and gives the budget back. While it is passed on (pass), a
//     goroutine of passContext asks the socket whether the caller left.
//  4. Passed on, the holding (or first) goroutine copies caller to pod and
//     one goroutine of pipe copies pod to caller.
//
// Any other goroutine only interrupts a wait (interrupt, under mu), which
// moves a read deadline and nothing else, and never after handOver, or
// asks the socket's state (gone), which touches nothing.
type conn struct {
	srv     *Server
	sock    *net.TCPConn
	rc      syscall.RawConn // sock's
	port    int
	gen     *portListener // the listener it came through (Server.conns)
	route   Route
	removed bool // the route went: its port lingers, waking nothing
	src     netip.Addr

	heldCaps []capKey // the held caps taken; nil when not held
	passCaps []capKey // the passing caps each pass takes
	terms    Terms
	start    time.Time // when the hold began, on the injected clock
	deadline time.Time // maxWait after start, in real time: a socket deadline
	wakes    bool      // the hold wakes the workload

	// A request to a workload that asks (ask.go): its head, the verdict
	// once judged, and what came of stamping its click.
	head    classify.Request
	verdict ask.Verdict
	clicked Clicked

	passTried bool // a pass straight on found no place or no pod answering

	// The held bytes (held.go).
	buf     []byte
	counted int   // bytes of buf taken from the shared budget
	readErr error // why the caller is gone: io.EOF when it closed

	mu         sync.Mutex
	handedOver bool // no interrupt touches sock after it
}

// errCallerLeft: the caller closed before it could be passed on.
var errCallerLeft = errors.New("caller left")

func newConn(s *Server, sock *net.TCPConn, pl *portListener, r Route, removed bool) *conn {
	c := &conn{srv: s, sock: sock, port: pl.port, gen: pl, route: r, removed: removed, src: remoteAddr(sock)}
	c.rc, c.readErr = sock.SyscallConn()
	return c
}

func remoteAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// facts are what the policy decides from, now.
func (c *conn) facts(kind classify.Kind, ready bool) Facts {
	return Facts{Kind: kind, Left: c.readErr != nil, Ready: ready, Removed: c.removed, Phase: c.route.Workload.Phase,
		Sent: len(c.buf) > 0, Verdict: c.verdict.Kind, WakeRequested: wakeRequested(c.route.Workload, c.srv.cfg.Clock.Now()),
		PausedUntil: !c.terms.PausedUntil.IsZero(), PassTried: c.passTried, Clicked: c.clicked}
}

// serve decides what to do with a new connection and does it, up to the
// wait: it asks the policy (decide) and does what the Decision says, one
// action at a time, until the policy holds, answers or drops it. It
// reports whether the connection is to be held: then waitAndPass takes it
// over on a fresh goroutine.
func (c *conn) serve() (hold bool) {
	s := c.srv
	var res classify.Result // res.Kind is classify.NeedMore until classified
	for {
		ready := len(s.table.Endpoints(c.route.Key())) > 0
		d := decide(c.facts(res.Kind, ready))
		switch d.Action {
		case Pass:
			if c.passStraight() {
				return false
			}
			c.passTried = true
		case Classify:
			if !c.takeHeld() {
				return false
			}
			var ok bool
			if res, ok = c.classify(); !ok {
				return false
			}
		case Judge:
			c.verdict = c.judge()
		case Click:
			c.clicked = c.click()
		case Hold:
			c.wakes = d.Wake
			return true
		case Answer:
			c.answer(res, d)
			return false
		case Drop:
			return false // closed by end, with nothing sent
		default:
			panic(fmt.Sprintf("decide returned %v for a connection being served", d.Action))
		}
	}
}

// passStraight passes a connection with a Ready pod straight on, before
// reading anything. It reports whether the connection is done with: passed
// on, or its caller left; false when no passing place was free or no pod
// answered.
func (c *conn) passStraight() bool {
	ok, _ := c.srv.caps.takePassing(c.passingCaps())
	if !ok {
		return false
	}
	err := c.pass(c.srv.table.Endpoints(c.route.Key()))
	return err == nil || errors.Is(err, errCallerLeft)
}

// takeHeld takes the held caps. Over any, the connection is closed at once
// with nothing sent: a request turned away, counted in the pause's total
// as well as by the cap that refused it.
func (c *conn) takeHeld() bool {
	s := c.srv
	keys := s.cfg.Limits.heldKeys(c.src, c.route.Workload)
	if ok, refused := s.caps.takeHeld(keys); !ok {
		s.metrics.Rejections.WithLabelValues(refused).Inc()
		s.metrics.Wakes.WithLabelValues(metrics.ResultTurnedAway).Inc()
		s.hooks.TurnedAway(c.route.Workload)
		_ = c.sock.SetLinger(0)
		return false
	}
	c.heldCaps = keys
	s.metrics.Held.Inc()
	return true
}

// releaseHeld gives the held caps back, once.
func (c *conn) releaseHeld() {
	if c.heldCaps != nil {
		c.srv.caps.giveHeld(c.heldCaps)
		c.heldCaps = nil
		c.srv.metrics.Held.Dec()
	}
}

func (c *conn) passingCaps() []capKey {
	if c.passCaps == nil {
		c.passCaps = c.srv.cfg.Limits.passingKeys(c.src)
	}
	return c.passCaps
}

// classify reads the caller's first bytes until classify decides, the
// caller leaves or Silence passes (then what was read decides). The hold
// starts here: its terms and maxWait are fixed now. It reports false when
// the doorman is closing.
func (c *conn) classify() (classify.Result, bool) {
	s := c.srv
	c.start = s.cfg.Clock.Now()
	c.terms = termsFor(c.route.Workload, s.routes.sharers(c.route))
	c.terms.PausedUntil = c.route.Workload.PausedUntil(c.start)
	c.deadline = time.Now().Add(c.terms.MaxWait)
	opts := classify.Options{ExtraAgents: s.cfg.ExtraAgents, Page: c.terms.Page, Ask: c.terms.Ask || !c.terms.PausedUntil.IsZero()}
	silenceAt := time.Now().Add(s.cfg.Silence)
	for {
		var res classify.Result
		res, c.head = classify.ClassifyHead(c.buf, c.readErr != nil, opts)
		if res.Kind != classify.NeedMore {
			return res, true
		}
		err := c.readUntil(silenceAt, nil, nil)
		if isTimeout(err) {
			res, c.head = classify.ClassifyHead(c.buf, true, opts)
			return res, true
		}
		if s.ctx.Err() != nil {
			return res, false
		}
	}
}

// answer sends the doorman's own answer and closes.
func (c *conn) answer(res classify.Result, d Decision) {
	s := c.srv
	head := res.Method == "HEAD"
	var out []byte
	switch d.Reply {
	case ProbeReply:
		out = page.Probe(head)
	case HealthyReply:
		out = page.GoogleHC(head)
	case NotFoundReply:
		out = page.NotFound(head)
	case AsleepReply:
		out = page.Asleep(res.WantsJSON, head)
	case AsleepPage:
		out = c.asleepPage(c.verdict.Kind.Notice(), time.Time{})
	case ClickFailedPage:
		out = c.asleepPage(page.NoticeTryAgain, time.Time{})
	case ClickTooSoonPage:
		out = c.asleepPage(ask.TooSoon.Notice(), time.Time{})
	case PausedPage:
		out = c.asleepPage(page.NoticeNone, c.terms.PausedUntil)
	case PausedReply:
		out = page.Paused(c.terms.PausedUntil, s.cfg.Clock.Now(), res.WantsJSON, head)
	case WakingPage:
		wp := page.Waking{Host: res.Host, Path: res.Path, Head: head}
		if w := c.route.Workload; w.Phase == string(napwakev1alpha1.PhaseResuming) && !w.ResumedAt.IsZero() {
			d := max(s.cfg.Clock.Since(w.ResumedAt), 0)
			wp.Starting = &d
		}
		out = wp.Render()
	case NoReply:
	}
	if d.Wake {
		s.waker.wakeAnswered(s.ctx, c.route, c.src)
	}
	if d.TurnedAway {
		s.metrics.Wakes.WithLabelValues(metrics.ResultTurnedAway).Inc()
		s.hooks.TurnedAway(c.route.Workload)
	}
	if len(out) == 0 {
		return
	}
	_ = c.sock.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	_, _ = c.sock.Write(out)
	_ = c.sock.CloseWrite()
	// Read what the caller still sends for a moment, so closing with
	// unread bytes doesn't reset the connection before it reads the answer.
	_ = c.sock.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var sink [512]byte
	for range 64 {
		if _, err := c.sock.Read(sink[:]); err != nil {
			break
		}
	}
}

// dialRetry is what a held connection remembers of its last failed dial.
type dialRetry struct {
	at  time.Time        // the next dial to the same endpoints, not before
	on  []netip.AddrPort // the endpoints it failed on
	err error            // why
}

// waitAndPass runs on the goroutine that holds the connection (2 in the
// type's comment): it wakes the workload if the hold is to, waits for a
// Ready pod and a passing place, and passes the connection on; after a
// failed dial it waits again, until maxWait.
func (c *conn) waitAndPass() {
	s := c.srv
	if c.wakes {
		ctx, cancel := context.WithCancel(s.ctx)
		defer cancel()
		go s.waker.wakeWhileHeld(ctx, c.route, c.src, s.cfg.Clock.Now().Add(c.terms.MaxWait))
	}
	var retry dialRetry
	for {
		eps, ok := c.wait(&retry)
		if !ok {
			return
		}
		err := c.pass(eps)
		if err == nil || errors.Is(err, errCallerLeft) {
			return
		}
		retry = dialRetry{at: time.Now().Add(s.cfg.DialRetry), on: eps, err: err}
	}
}

// wait holds the connection until a Ready pod and a passing place (taken
// for pass), and returns the pod's endpoints. It waits by reading from the
// caller, so a caller who leaves is let go at once, until the deadline or
// until the endpoints change or a place frees: then it looks again. A
// retry waits out DialRetry, unless the Ready endpoints change meanwhile:
// a pod that turned Ready is tried at once. At the deadline it reports the
// connection not served and returns false, as it does when the caller
// left or the doorman closes.
func (c *conn) wait(retry *dialRetry) ([]netip.AddrPort, bool) {
	s := c.srv
	key := c.route.Key()
	s.table.hold(key, 1)
	defer s.table.hold(key, -1)
	for {
		eps, changed := s.table.watch(key)
		var placeFreed context.Context
		until := c.deadline
		if len(eps) > 0 {
			if time.Now().Before(retry.at) && slices.Equal(eps, retry.on) {
				until = minTime(retry.at, c.deadline)
			} else if c.left() != nil {
				return nil, false // gone while not read: never passed on
			} else if ok, freed := s.caps.takePassing(c.passingCaps()); ok {
				return eps, true
			} else {
				placeFreed = freed
			}
		}
		err := c.readUntil(until, changed, placeFreed)
		if err == nil || errors.Is(err, errInterrupted) || (isTimeout(err) && time.Now().Before(c.deadline)) {
			continue
		}
		if isTimeout(err) {
			result, why := notServed(retry.err, len(eps) > 0)
			s.metrics.Wakes.WithLabelValues(result).Inc()
			s.hooks.NotServed(c.route.Workload, c.route.Service, s.cfg.Clock.Since(c.start), why)
		}
		return nil, false // given up, the caller left, or the doorman is closing
	}
}

// pass has a dialler connect to one of eps, replays the held bytes, then
// copies both ways until the connection ends. It owns the passing place
// taken for it and gives it back. A nil error means it was passed on.
func (c *conn) pass(eps []netip.AddrPort) error {
	s := c.srv
	defer s.caps.givePassing(c.passCaps)
	ctx, cancel := c.passContext()
	backend, err := c.connectAndReplay(ctx, eps)
	cancel()
	if err != nil {
		if c.left() != nil {
			return errCallerLeft
		}
		return err
	}
	defer s.untrack(backend)
	c.handOver()
	if c.heldCaps != nil {
		c.releaseBytes()
		c.releaseHeld()
		s.metrics.Wakes.WithLabelValues(metrics.ResultWoken).Inc()
		s.metrics.Wait.Observe(s.cfg.Clock.Since(c.start).Seconds())
	} else {
		s.metrics.Wakes.WithLabelValues(metrics.ResultPassed).Inc()
	}
	s.metrics.Passing.Inc()
	defer s.metrics.Passing.Dec()
	s.activity.add(c.route.Workload, 1)
	defer s.activity.add(c.route.Workload, -1)
	s.pipe(s.ctx, c.sock, backend)
	return nil
}

// passContext is what passing the connection on waits under: the doorman's
// context, the caller's leaving, which a timer asks the socket about every
// leftCheck (nothing reads the caller meanwhile; a connect that is quick
// starts no goroutine), and for a held caller its maxWait (one passed
// straight on has only the dial timeout).
func (c *conn) passContext() (context.Context, context.CancelFunc) {
	s := c.srv
	var ctx context.Context
	var cancel context.CancelFunc
	if c.heldCaps != nil {
		ctx, cancel = context.WithDeadline(s.ctx, c.deadline)
	} else {
		ctx, cancel = context.WithCancel(s.ctx)
	}
	var mu sync.Mutex
	var check *time.Timer
	mu.Lock()
	defer mu.Unlock()
	check = time.AfterFunc(leftCheck, func() {
		if c.gone() != nil {
			cancel()
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() == nil {
			check.Reset(leftCheck)
		}
	})
	return ctx, func() {
		cancel()
		mu.Lock()
		defer mu.Unlock()
		check.Stop()
	}
}

// connectAndReplay connects to one of eps through the dial pool, then
// sends the pod the held bytes, byte-exact, both until ctx ends. The pod
// is tracked; on an error it is closed. A caller that has left is never
// passed on.
func (c *conn) connectAndReplay(ctx context.Context, eps []netip.AddrPort) (_ *net.TCPConn, err error) {
	s := c.srv
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	backend, err := s.dials.connect(ctx, c.route.Workload, eps)
	if err != nil {
		return nil, err
	}
	if !s.track(backend, c.gen) {
		_ = backend.Close()
		return nil, errCallerLeft
	}
	defer func() {
		if err != nil {
			s.untrack(backend)
		}
	}()
	if c.heldCaps == nil {
		return backend, nil // passed straight on: nothing held
	}
	if c.left() != nil { // asked again: nobody read the caller while the dial was in flight
		return nil, errCallerLeft
	}
	if err := c.replay(ctx, backend); err != nil {
		return nil, fmt.Errorf("replaying held bytes to %s: %w", backend.RemoteAddr(), err)
	}
	return backend, nil
}

// replay writes the held bytes to the pod until ctx ends (the caller's
// maxWait, or its leaving), a leftCheck at a time, so a pod that reads
// slowly, or not at all, keeps only this caller waiting, and no longer
// than the caller would wait for it anyway.
func (c *conn) replay(ctx context.Context, backend *net.TCPConn) error {
	deadline, bounded := ctx.Deadline()
	defer func() { _ = backend.SetWriteDeadline(time.Time{}) }()
	for off := 0; off < len(c.buf); {
		if err := ctx.Err(); err != nil {
			return err
		}
		at := time.Now().Add(leftCheck)
		if bounded {
			at = minTime(at, deadline)
		}
		_ = backend.SetWriteDeadline(at)
		n, err := backend.Write(c.buf[off:])
		off += n
		if err != nil && !isTimeout(err) {
			return err
		}
	}
	return nil
}

// interrupt cuts the connection's current or next wait short, so that it
// looks again. Any goroutine may call it (context.AfterFunc does, when a
// notifier's context is done); it does nothing once handed over.
func (c *conn) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.handedOver {
		_ = c.sock.SetReadDeadline(time.Unix(1, 0))
	}
}

// handOver ends holding: no interrupt touches the socket after it.
func (c *conn) handOver() {
	c.mu.Lock()
	c.handedOver = true
	c.mu.Unlock()
	_ = c.sock.SetReadDeadline(time.Time{})
}

// end closes the connection: every cap and byte it took is given back,
// and the registry forgets it.
func (c *conn) end() {
	c.releaseBytes()
	c.releaseHeld()
	c.srv.untrack(c.sock)
	c.srv.wg.Done()
}
