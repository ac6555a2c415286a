package proxy

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Limits are the caps of wake-on-request.md "Limits". Defaults() gives the
// documented values; tests use small ones.
type Limits struct {
	// Held connections per doorman pod, per workload, per source IP, per
	// source IP for one workload. Over any: closed at once, nothing sent.
	Held, HeldPerWorkload, HeldPerSource, HeldPerSourceWorkload int
	// Passing connections per doorman pod and per source IP. Over: held.
	Passing, PassingPerSource int
	// Wakes per source IP (burst, then one every SourceEvery) and overall
	// (burst, then OverallPerSecond a second).
	SourceBurst      int
	SourceEvery      time.Duration
	OverallBurst     int
	OverallPerSecond float64
	// Bytes read from held callers: each connection's first FreeBytes are
	// not counted; then up to ConnBytes per connection and TotalBytes in all.
	FreeBytes, ConnBytes, TotalBytes int
}

// descriptors is how many descriptors the doorman may have open at once
// within these caps: one for each held caller, two for each passing
// connection (the caller's and the pod's), and room for the listeners and
// the doorman's own connections.
func (l Limits) descriptors() int { return l.Held + 2*l.Passing + 1024 }

// DefaultLimits returns the documented caps.
func DefaultLimits() Limits {
	return Limits{
		Held: 2048, HeldPerWorkload: 256, HeldPerSource: 1024, HeldPerSourceWorkload: 128,
		Passing: 1024, PassingPerSource: 512,
		SourceBurst: 30, SourceEvery: 2 * time.Second, OverallBurst: 200, OverallPerSecond: 10,
		FreeBytes: 8 << 10, ConnBytes: 1 << 20, TotalBytes: 32 << 20,
	}
}

// Cap names, the values of the rejections metric's cap label.
const (
	CapHeld                  = "held"
	CapHeldPerWorkload       = "held_per_workload"
	CapHeldPerSource         = "held_per_source"
	CapHeldPerSourceWorkload = "held_per_source_workload"
	CapPassing               = "passing"
	CapPassingPerSource      = "passing_per_source"
	CapWakePerSource         = "wake_per_source"
	CapWakeOverall           = "wake_overall"
)

// counter is a set of caps taken and given back together, in one place.
type counter struct {
	mu    sync.Mutex
	total int
	per   map[string]int
}

type capKey struct {
	name string // cap name, for the metric
	key  string // "" for the total
	max  int
}

// take takes one place under every cap, or none and names the cap refused.
func (c *counter) take(keys []capKey) (bool, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		n := c.total
		if k.key != "" {
			n = c.per[k.key]
		}
		if n >= k.max {
			return false, k.name
		}
	}
	for _, k := range keys {
		if k.key == "" {
			c.total++
		} else {
			c.per[k.key]++
		}
	}
	return true, ""
}

func (c *counter) give(keys []capKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		if k.key == "" {
			c.total--
		} else if c.per[k.key]--; c.per[k.key] <= 0 {
			delete(c.per, k.key)
		}
	}
}

func (s *Server) heldKeys(src netip.Addr, w Workload) []capKey {
	l := s.cfg.Limits
	return []capKey{
		{CapHeld, "", l.Held},
		{CapHeldPerWorkload, "w|" + w.Key(), l.HeldPerWorkload},
		{CapHeldPerSource, "s|" + src.String(), l.HeldPerSource},
		{CapHeldPerSourceWorkload, "sw|" + src.String() + "|" + w.Key(), l.HeldPerSourceWorkload},
	}
}

func (s *Server) passingKeys(src netip.Addr) []capKey {
	l := s.cfg.Limits
	return []capKey{{CapPassing, "", l.Passing}, {CapPassingPerSource, "s|" + src.String(), l.PassingPerSource}}
}

// wakeLimiter applies the wake rate limits. A wake the overall limit
// refuses does not use its source's allowance.
type wakeLimiter struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	l       Limits
	overall *rate.Limiter
	sources map[netip.Addr]*rate.Limiter
}

// maxSources bounds the per-source table; full limiters are forgotten first.
const maxSources = 4096

func newWakeLimiter(l Limits, c clock.PassiveClock) *wakeLimiter {
	return &wakeLimiter{clock: c, l: l, overall: rate.NewLimiter(rate.Limit(l.OverallPerSecond), l.OverallBurst), sources: map[netip.Addr]*rate.Limiter{}}
}

// allow reports whether a wake from src may go now, or names the cap refusing it.
func (w *wakeLimiter) allow(src netip.Addr) (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	lim, ok := w.sources[src]
	if !ok {
		if len(w.sources) >= maxSources {
			for a, l := range w.sources {
				if l.TokensAt(now) >= float64(w.l.SourceBurst) {
					delete(w.sources, a)
				}
			}
		}
		lim = rate.NewLimiter(rate.Every(w.l.SourceEvery), w.l.SourceBurst)
		w.sources[src] = lim
	}
	if lim.TokensAt(now) < 1 {
		return false, CapWakePerSource
	}
	if !w.overall.AllowN(now, 1) {
		return false, CapWakeOverall
	}
	lim.AllowN(now, 1)
	return true, ""
}

// byteBudget is the 32 MiB all held callers' counted bytes share.
type byteBudget struct {
	mu    sync.Mutex
	free  int
	freed chan struct{} // closed and replaced when bytes are given back
}

func newByteBudget(n int) *byteBudget { return &byteBudget{free: n, freed: make(chan struct{})} }

// take takes up to n bytes, waiting while none are free; it returns how
// many it got, or 0 when ctx ends or stop closes first.
func (b *byteBudget) take(ctx context.Context, stop <-chan struct{}, n int) int {
	for {
		b.mu.Lock()
		if b.free > 0 {
			got := min(n, b.free)
			b.free -= got
			b.mu.Unlock()
			return got
		}
		ch := b.freed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-stop:
			return 0
		case <-ctx.Done():
			return 0
		}
	}
}

// tryTake takes up to n bytes without waiting; it returns how many.
func (b *byteBudget) tryTake(n int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	got := min(n, b.free)
	b.free -= got
	return got
}

// freedChan is closed the next time bytes are given back.
func (b *byteBudget) freedChan() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.freed
}

func (b *byteBudget) give(n int) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	close(b.freed)
	b.freed = make(chan struct{})
}
