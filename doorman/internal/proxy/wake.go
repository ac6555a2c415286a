package proxy

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/shared/onewake"
)

// waker wakes the workloads a connection is for, within the wake rate
// limits, and remembers which pauses this doorman has woken. Each waking
// connection runs its own loop (wake) on a goroutine of its own: it never
// touches the connection, only the route and source it was given, so a
// wake the API server is slow to accept holds nothing up.
type waker struct {
	hooks   Hooks
	clock   clock.WithTickerAndDelayedExecution
	retry   time.Duration
	metrics *metrics.Metrics
	routes  *routeSet
	log     logr.Logger // set by Server.Start

	mu       sync.Mutex
	limiter  *wakeLimiter
	lastWake map[string]woken
	swept    time.Time // when remember last dropped the entries that say nothing
	// failLog spaces the log lines of failed wakes: through an API outage
	// every held caller's retry fails, hundreds a second; suppressed counts
	// those not logged, told with the next line.
	failLog    *rate.Limiter
	suppressed int
	// retriers are the answered wakes' retry loops, one per workload and
	// Service port (wakeAnswered); answeredFor is how long each runs
	// after the last answer that asked for it (answeredWakeFor).
	retriers    map[retrierKey]*retrier
	answeredFor time.Duration
	started     int // retriers started, for the tests
}

// retrierKey names what one answered-wake retrier wakes: a route's
// workload through its Service port.
type retrierKey struct {
	service  ServiceKey
	workload string
}

// retrier is one answered wake's retry loop: the route and source the
// latest answer gave it, and until when it runs. Under waker.mu.
type retrier struct {
	route Route
	src   netip.Addr
	until time.Time
}

// Failed wakes are logged at most failLogBurst at once, then one a second.
const failLogBurst = 5

// wakeAnswered wakes r's workload for a caller that was answered (a
// browser shown the waking-up page, a click) and retries the wake for
// answeredFor after it. A workload has one such retrier, whatever the
// answers: a page load while one runs only extends it (and hands it its
// source, for the rate limits), so reloads during an API-server or
// operator outage cost the doorman nothing that grows with them.
func (k *waker) wakeAnswered(ctx context.Context, r Route, src netip.Addr) {
	key := retrierKey{service: r.Key(), workload: r.Workload.Key()}
	k.mu.Lock()
	until := k.clock.Now().Add(k.answeredFor)
	if rt, ok := k.retriers[key]; ok {
		rt.route, rt.src, rt.until = r, src, until
		k.mu.Unlock()
		return
	}
	rt := &retrier{route: r, src: src, until: until}
	k.retriers[key] = rt
	k.started++
	k.mu.Unlock()
	go func() {
		for {
			k.wake(ctx, r, src, until)
			k.mu.Lock()
			if ctx.Err() != nil || !rt.until.After(until) {
				delete(k.retriers, key)
				k.mu.Unlock()
				return
			}
			r, src, until = rt.route, rt.src, rt.until // extended meanwhile
			k.mu.Unlock()
			// wake ended its time just after an attempt: the next one
			// waits out the retry pause, as within wake.
			t := k.clock.NewTimer(k.retry)
			select {
			case <-t.C():
			case <-ctx.Done():
				t.Stop()
			}
		}
	}()
}

// wakeWhileHeld wakes r's workload for a caller held until until (its
// maxWait), and again each time the routes change while it waits: the
// workload it waits on may pause again after the first wake found nothing
// to wake (the caller came through a removed route's lingering port, or
// another caller woke it and it paused before a pod was Ready), and the
// caller is then a caller of that pause, not one left to wait out its
// maxWait beside a Paused workload. ctx ends when the caller is passed
// on or let go (at its maxWait at the latest).
func (k *waker) wakeWhileHeld(ctx context.Context, r Route, src netip.Addr, until time.Time) {
	for {
		changed := k.routes.changes()
		k.wake(ctx, r, src, until)
		if !k.clock.Now().Before(until) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// wake wakes r's workload, and every other paused workload routed for the
// same Service port ("Services shared with other workloads": every
// workload behind it paused, a request wakes them all), retrying every
// WakeRetry while a rate limit refuses or a patch fails, until none is
// paused any more in this doorman's view, until passes or ctx ends (no
// caller wants it any more). One request counts once against the rate
// limits, however many workloads it wakes; its allowance is taken before
// the patch goes and given back if the API server refused it.
//
// Callers held at once share one wake: the first to find a workload
// unstamped claims it, the others wait while the claim is in flight and
// take over if it fails, so a wake that failed is not dropped when the
// caller that tried it leaves while others wait.
func (k *waker) wake(ctx context.Context, r Route, src netip.Addr, until time.Time) {
	for {
		// The workloads as they are now, not as the caller found them: the
		// loop ends once none is paused any more (woken, or its route gone).
		ws := k.routes.wakeable(r)
		if len(ws) == 0 {
			return
		}
		var claimed []Workload
		for _, w := range ws {
			if k.claim(w) == wakeClaimed { // in flight elsewhere, or stamped: looked at again next round
				claimed = append(claimed, w)
			}
		}
		// Nothing claimed and nothing in flight is not the end: a workload
		// this doorman (or another pod) stamped but still Paused after
		// WakeStands is stamped again (wouldWake), so a caller held alone
		// is not left waiting out its maxWait on a stamp the operator read
		// as before the pause, or one made from a stale view.
		if len(claimed) > 0 {
			if refund, cap := k.take(src); refund == nil {
				k.metrics.Rejections.WithLabelValues(cap).Inc()
				k.unclaim(claimed)
			} else if ok := k.patch(ctx, r.Service, src, claimed); !ok && !k.someWoke(claimed) {
				k.refund(refund)
			}
		}
		if !k.clock.Now().Add(k.retry).Before(until) {
			return
		}
		t := k.clock.NewTimer(k.retry)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// patch wakes each of ws through the hooks, each within patchTimeout,
// remembering each woken and giving up the claim on each that failed; it
// reports whether all were.
func (k *waker) patch(ctx context.Context, service string, src netip.Addr, ws []Workload) bool {
	all := true
	for _, w := range ws {
		// A patch once begun goes on when its caller is passed on or
		// leaves (within PatchTimeout): the request came during the pause
		// and calls it off. Canceled with its caller, every caller held
		// between the route and the scale to 0 began a stamp and had it
		// canceled the moment it was passed to the still-Ready pod: one
		// canceled write after another, none landing, the pause never
		// called off (docs/design/doorman.md).
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), onewake.PatchTimeout)
		err := k.hooks.Wake(pctx, w, service, src)
		cancel()
		k.mu.Lock()
		if err != nil {
			delete(k.lastWake, w.Key())
		} else {
			k.remember(w, false)
		}
		k.mu.Unlock()
		if err != nil {
			k.logFailure(err, w)
			all = false
		}
	}
	return all
}

// logFailure logs a failed wake of w, unless too many were just logged.
func (k *waker) logFailure(err error, w Workload) {
	k.mu.Lock()
	if !k.failLog.Allow() {
		k.suppressed++
		k.mu.Unlock()
		return
	}
	n := k.suppressed
	k.suppressed = 0
	k.mu.Unlock()
	k.log.Error(err, "Waking", "workload", w.Key(), "failuresNotLogged", n)
}

// unclaim gives up the claims on ws, whose wake did not go.
func (k *waker) unclaim(ws []Workload) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range ws {
		if last, ok := k.lastWake[w.Key()]; ok && last.inFlight {
			delete(k.lastWake, w.Key())
		}
	}
}

// take takes a wake's allowance from src's and the overall rate limits
// before its patch goes, so concurrent wakes count as they go: refund is
// nil when a limit refuses (cap names it), else it gives the allowance
// back, for a wake the API server refused.
func (k *waker) take(src netip.Addr) (refund func(), cap string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.limiter.take(src)
}

// refund gives a failed wake's allowance back (under the limiter's lock,
// the waker's).
func (k *waker) refund(f func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f()
}

// someWoke says whether any of ws is remembered woken, not in flight:
// a patch that woke some of a Service's workloads keeps its allowance.
func (k *waker) someWoke(ws []Workload) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range ws {
		if last, ok := k.lastWake[w.Key()]; ok && !last.inFlight {
			return true
		}
	}
	return false
}

// Whether a caller should stamp a wake of a workload now (claim).
const (
	wakeDone     = iota // not paused, or woken in this pause: nothing to do
	wakeInFlight        // another caller's wake of it is in flight: wait
	wakeClaimed         // this caller stamps it, and holds the claim
)

// claim is the policy's wouldWake over what this doorman has woken and is
// waking; a workload it would wake is claimed for the caller, so callers
// held at once stamp it once.
func (k *waker) claim(w Workload) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	last, known := k.lastWake[w.Key()]
	if known && last.inFlight {
		return wakeInFlight
	}
	if !wouldWake(w, last, known, k.clock.Now(), k.retry) {
		return wakeDone
	}
	k.remember(w, true)
	return wakeClaimed
}

// sweep drops, k.mu held, the memo entries that no longer say anything
// (not in flight, and older than both the retry pause and WakeStands:
// wouldWake reads them as unknown) and the per-source limiters that are
// full again (a new one is the same), so a doorman whose workloads were
// woken once and went (preview environments) keeps nothing of them.
func (k *waker) sweep(now time.Time) {
	k.swept = now
	for key, last := range k.lastWake {
		if !last.inFlight && now.Sub(last.at) >= max(k.retry, onewake.WakeStands) {
			delete(k.lastWake, key)
		}
	}
	k.limiter.forgetFull(now)
}

// housekeep sweeps every WakeStands until ctx ends, so the tables empty
// when no wake comes to do it.
func (k *waker) housekeep(ctx context.Context) {
	t := k.clock.NewTicker(onewake.WakeStands)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C():
			k.mu.Lock()
			k.sweep(now)
			k.mu.Unlock()
		}
	}
}

// clicked remembers a click's wake of w, stamped by Hooks.Click, so the
// wakes that follow for its Service (its sharers) do not stamp w again.
func (k *waker) clicked(w Workload) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.remember(w, false)
}

// remember records a wake of w now, k.mu held. It sweeps first when
// housekeep has not for WakeStands; past maxSources entries it forgets
// them all.
func (k *waker) remember(w Workload, inFlight bool) {
	now := k.clock.Now()
	if now.Sub(k.swept) >= onewake.WakeStands {
		k.sweep(now)
	}
	if len(k.lastWake) > maxSources {
		clear(k.lastWake)
	}
	k.lastWake[w.Key()] = woken{at: now, pausedAt: w.PausedAt, inFlight: inFlight}
}
