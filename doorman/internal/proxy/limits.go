package proxy

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Limits are the caps of docs/design/doorman.md#limits. Defaults() gives the
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

// caps are every cap a connection takes and gives back, under one lock:
// the held and passing places, and the bytes held callers share. Each
// kind of freeing has its notifier, so a connection waiting for a place
// or for bytes looks again when one is given back.
type caps struct {
	mu            sync.Mutex
	held, passing counter
	bytesFree     int
	placeFreed    notifier
	bytesFreed    notifier
}

func newCaps(l Limits) *caps {
	return &caps{held: counter{per: map[string]int{}}, passing: counter{per: map[string]int{}}, bytesFree: l.TotalBytes}
}

// takeHeld takes a held place under every key, or none and names the cap
// refusing it.
func (c *caps) takeHeld(keys []capKey) (bool, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held.take(keys)
}

func (c *caps) giveHeld(keys []capKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held.give(keys)
}

// takePassing takes a passing place under every key. When none is free it
// returns a context done when one is given back.
func (c *caps) takePassing(keys []capKey) (ok bool, freed context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok, _ := c.passing.take(keys); ok {
		return true, nil
	}
	return false, c.placeFreed.next()
}

func (c *caps) givePassing(keys []capKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.passing.give(keys)
	c.placeFreed.changed()
}

// takeBytes takes up to n bytes of the shared budget without waiting. When
// none are free it returns a context done when some are given back.
func (c *caps) takeBytes(n int) (got int, freed context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got = min(n, c.bytesFree)
	c.bytesFree -= got
	if got == 0 {
		return 0, c.bytesFreed.next()
	}
	return got, nil
}

func (c *caps) giveBytes(n int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytesFree += n
	c.bytesFreed.changed()
}

// counter is one kind of place (held or passing): how many are taken in
// all and under each key. The caps' lock guards it.
type counter struct {
	total int
	per   map[string]int
}

type capKey struct {
	name string // cap name, for the metric
	key  string // "" for the total
	max  int
}

// take takes one place under every key, or none and names the cap refused.
func (c *counter) take(keys []capKey) (bool, string) {
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
	for _, k := range keys {
		if k.key == "" {
			c.total--
		} else if c.per[k.key]--; c.per[k.key] <= 0 {
			delete(c.per, k.key)
		}
	}
}

// heldKeys are the held caps a connection from src to w takes.
func (l Limits) heldKeys(src netip.Addr, w Workload) []capKey {
	return []capKey{
		{CapHeld, "", l.Held},
		{CapHeldPerWorkload, "w|" + w.Key(), l.HeldPerWorkload},
		{CapHeldPerSource, "s|" + src.String(), l.HeldPerSource},
		{CapHeldPerSourceWorkload, "sw|" + src.String() + "|" + w.Key(), l.HeldPerSourceWorkload},
	}
}

// passingKeys are the passing caps a connection from src takes.
func (l Limits) passingKeys(src netip.Addr) []capKey {
	return []capKey{{CapPassing, "", l.Passing}, {CapPassingPerSource, "s|" + src.String(), l.PassingPerSource}}
}

// wakeLimiter applies the wake rate limits. A wake takes its tokens, its
// source's and the overall one, before its patch is sent, so wakes in
// flight at once count against the limits as they go (docs/security.md):
// a scanner touching a thousand paused ports from one address wakes its
// burst's worth, not all of them. A wake the API server refused gives them
// back, and one the overall limit refuses does not use its source's
// allowance. Its owner's lock (the waker's) guards it.
type wakeLimiter struct {
	clock   clock.PassiveClock
	l       Limits
	overall *bucket
	sources map[netip.Addr]*bucket
}

// maxSources bounds the per-source table; full buckets are forgotten first.
const maxSources = 4096

func newWakeLimiter(l Limits, c clock.PassiveClock) *wakeLimiter {
	return &wakeLimiter{clock: c, l: l, overall: newBucket(l.OverallBurst, time.Duration(float64(time.Second)/l.OverallPerSecond), c.Now()),
		sources: map[netip.Addr]*bucket{}}
}

// forgetFull drops the per-source buckets that are full at now: a new one
// for that source would be the same.
func (w *wakeLimiter) forgetFull(now time.Time) {
	for a, b := range w.sources {
		if b.tokensAt(now) >= float64(w.l.SourceBurst) {
			delete(w.sources, a)
		}
	}
}

// take takes a wake's tokens from src's allowance and the overall one, or
// none, and names the limit refusing it. refund gives both back, for a
// wake whose patch failed.
func (w *wakeLimiter) take(src netip.Addr) (refund func(), cap string) {
	now := w.clock.Now()
	b, ok := w.sources[src]
	if !ok {
		if len(w.sources) >= maxSources {
			w.forgetFull(now)
		}
		b = newBucket(w.l.SourceBurst, w.l.SourceEvery, now)
		w.sources[src] = b
	}
	if !b.take(now) {
		return nil, CapWakePerSource
	}
	if !w.overall.take(now) {
		b.give(now)
		return nil, CapWakeOverall
	}
	return func() {
		at := w.clock.Now()
		b.give(at)
		w.overall.give(at)
	}, ""
}

// bucket is a token bucket: burst tokens, one more every interval. Unlike
// rate.Limiter, a token taken can be given back at any time later.
type bucket struct {
	burst  float64
	every  time.Duration
	tokens float64
	at     time.Time // when tokens was counted
}

func newBucket(burst int, every time.Duration, now time.Time) *bucket {
	return &bucket{burst: float64(burst), every: every, tokens: float64(burst), at: now}
}

// tokensAt is how many tokens the bucket has at now.
func (b *bucket) tokensAt(now time.Time) float64 {
	t := b.tokens
	if d := now.Sub(b.at); d > 0 && b.every > 0 {
		t += float64(d) / float64(b.every)
	}
	return min(t, b.burst)
}

// take takes a token at now, if there is one.
func (b *bucket) take(now time.Time) bool {
	t := b.tokensAt(now)
	if t < 1 {
		return false
	}
	b.tokens, b.at = t-1, maxTime(now, b.at)
	return true
}

// give gives a token back at now.
func (b *bucket) give(now time.Time) {
	b.tokens, b.at = min(b.tokensAt(now)+1, b.burst), maxTime(now, b.at)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
