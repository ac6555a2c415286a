package proxy

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"napwake.dev/doorman/internal/metrics"
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
}

// wake wakes r's workload, and every other paused workload routed for the
// same Service port ("Services shared with other workloads": every
// workload behind it paused, a request wakes them all), retrying every
// WakeRetry while a rate limit refuses or a patch fails, until each is
// woken, until passes or ctx ends. One request counts once against the
// rate limits, however many workloads it wakes.
func (k *waker) wake(ctx context.Context, r Route, src netip.Addr, until time.Time) {
	for {
		var pending []Workload
		for _, w := range append([]Workload{r.Workload}, k.routes.sharers(r)...) {
			if k.wouldWake(w) {
				pending = append(pending, w)
			}
		}
		if len(pending) == 0 {
			return
		}
		if ok, cap := k.allow(src); !ok {
			k.metrics.Rejections.WithLabelValues(cap).Inc()
		} else if k.patch(ctx, r.Service, src, pending) {
			return
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

// patch wakes each of ws through the hooks, remembering each woken; it
// reports whether all were.
func (k *waker) patch(ctx context.Context, service string, src netip.Addr, ws []Workload) bool {
	all := true
	for _, w := range ws {
		if err := k.hooks.Wake(ctx, w, service, src); err != nil {
			k.log.Error(err, "Waking", "workload", w.Key())
			all = false
			continue
		}
		k.mu.Lock()
		k.lastWake[w.Key()] = woken{at: k.clock.Now(), pausedAt: w.PausedAt}
		k.mu.Unlock()
	}
	return all
}

// allow applies the wake rate limits to a wake from src.
func (k *waker) allow(src netip.Addr) (bool, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.limiter.allow(src)
}

// wouldWake is the policy's wouldWake over what this doorman has woken.
func (k *waker) wouldWake(w Workload) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	last, known := k.lastWake[w.Key()]
	if !wouldWake(w, last, known, k.clock.Now(), k.retry) {
		return false
	}
	if len(k.lastWake) > maxSources {
		clear(k.lastWake)
	}
	return true
}

// clicked remembers a click's wake of w, stamped by Hooks.Click, so the
// wakes that follow for its Service (its sharers) do not stamp w again.
func (k *waker) clicked(w Workload) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.lastWake) > maxSources {
		clear(k.lastWake)
	}
	k.lastWake[w.Key()] = woken{at: k.clock.Now(), pausedAt: w.PausedAt}
}
