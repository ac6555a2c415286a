package proxy

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Workload is what the doorman knows of one ManagedWorkload.
type Workload struct {
	Namespace, Name string
	// Ask: spec.wake.mode is Ask.
	Ask bool
	// Page: spec.wake.page.
	Page bool
	// MaxWait: spec.wake.maxWait.
	MaxWait time.Duration
	// Phase is status.phase: Running, Pausing, Paused or Resuming.
	Phase string
	// PausedAt is status.pause.startedAt; zero when never paused.
	PausedAt time.Time
	// ResumedAt is status.resumedAt; zero when unknown.
	ResumedAt time.Time
	// LastRequest is the napwake.dev/last-request annotation, the last wake
	// request any doorman pod stamped; zero when unset or unreadable.
	LastRequest time.Time
	// PauseUntil and KeepAwakeUntil are the napwake.dev/pause-until and
	// napwake.dev/keep-awake-until annotations; zero when unset or
	// unreadable (see PausedUntil).
	PauseUntil, KeepAwakeUntil time.Time
}

// PausedUntil is when pause-until holds the workload paused to, as the
// operator reads it at now: zero when it is not in force (absent, run out,
// or outweighed by a keep-awake-until in force). Only napwake.dev/wake-
// requested wakes it before then, so the doorman wakes nothing.
func (w Workload) PausedUntil(now time.Time) time.Time {
	if !now.Before(w.PauseUntil) || now.Before(w.KeepAwakeUntil) {
		return time.Time{}
	}
	return w.PauseUntil
}

// Key names the workload, "namespace/name"; the per-workload caps use it.
func (w Workload) Key() string { return w.Namespace + "/" + w.Name }

// Route is one doorman port and what it answers for.
type Route struct {
	DoormanPort int
	Service     string
	PortName    string
	Port        int32
	Workload    Workload
}

// ServiceKey names the Service port whose Ready pods a route passes to.
type ServiceKey struct{ Namespace, Service, PortName string }

// Key returns the Service port the route leads to.
func (r Route) Key() ServiceKey {
	return ServiceKey{Namespace: r.Workload.Namespace, Service: r.Service, PortName: r.PortName}
}

// Table holds every routed Service port's Ready endpoints. The kube side
// writes it; connections read it, and a held one waits on its key's next
// change (watch), so it moves the moment a pod is Ready, never by polling.
type Table struct {
	mu   sync.Mutex
	keys map[ServiceKey]*tableEntry
}

// tableEntry is one Service port: its Ready endpoints, the notifier of
// their changes, and the held connections waiting for them.
type tableEntry struct {
	eps     []netip.AddrPort
	changed notifier
	waiting int
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{keys: map[ServiceKey]*tableEntry{}}
}

// Endpoints returns the Ready endpoints of k.
func (t *Table) Endpoints(k ServiceKey) []netip.AddrPort {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.keys[k]; e != nil {
		return e.eps
	}
	return nil
}

// watch returns the Ready endpoints of k and a context done at their next
// change, taken together: a change after this look closes the context.
func (t *Table) watch(k ServiceKey) ([]netip.AddrPort, context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(k)
	return e.eps, e.changed.next()
}

// hold counts a held connection of k into its wait (+1) or out of it (-1).
func (t *Table) hold(k ServiceKey, delta int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(k)
	e.waiting += delta
	t.forget(k, e)
}

// Waiting returns how many held connections of k are at their wait.
func (t *Table) Waiting(k ServiceKey) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.keys[k]; e != nil {
		return e.waiting
	}
	return 0
}

// SetEndpoints replaces the Ready endpoints of k and tells its waiters.
// The caller has already applied the dial rules.
func (t *Table) SetEndpoints(k ServiceKey, eps []netip.AddrPort) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(k)
	e.eps = eps
	if len(eps) == 0 {
		e.eps = nil
	}
	e.changed.changed()
	t.forget(k, e)
}

// entry returns k's entry, made if new; t.mu is held.
func (t *Table) entry(k ServiceKey) *tableEntry {
	if e, ok := t.keys[k]; ok {
		return e
	}
	e := &tableEntry{}
	t.keys[k] = e
	return e
}

// forget drops k's entry once it has no endpoints and no one waits on it;
// t.mu is held. A watch still holding its context is told to look again.
func (t *Table) forget(k ServiceKey, e *tableEntry) {
	if len(e.eps) == 0 && e.waiting <= 0 {
		e.changed.changed()
		delete(t.keys, k)
	}
}

// routeSet is the live routes (not removed) by Service port, replaced
// whole by SetRoutes: connections read it without a lock.
type routeSet struct {
	p atomic.Pointer[map[ServiceKey][]Route]

	mu      sync.Mutex
	changed chan struct{} // closed by the next set
}

func (rs *routeSet) set(live map[ServiceKey][]Route) {
	rs.p.Store(&live)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.changed != nil {
		close(rs.changed)
	}
	rs.changed = make(chan struct{})
}

// changes returns a channel closed when the routes next change.
func (rs *routeSet) changes() <-chan struct{} {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.changed == nil {
		rs.changed = make(chan struct{})
	}
	return rs.changed
}

// wakeable returns, as they are now, r's own workload and those sharing
// its Service port, that a request wakes (wakesOnRequest): the ones a
// caller of r still waits on to wake. r's own workload on whichever port
// its Service port is routed now: a caller who came through a removed
// route's lingering port (kube-proxy had not yet dropped the doorman's
// last slice) when the workload paused again on a new port is a caller of
// that pause. r's own workload also when r, as the caller found it, does
// not ask: a click passes its workload so.
func (rs *routeSet) wakeable(r Route) []Workload {
	m := rs.p.Load()
	if m == nil {
		return nil
	}
	live := (*m)[r.Key()]
	var out []Workload
	for _, o := range live {
		if o.Workload.Key() == r.Workload.Key() && paused(o.Workload) && (!asks(o.Workload) || !asks(r.Workload)) {
			out = append(out, o.Workload)
		}
	}
	for _, w := range sharersOf(r, live) {
		if wakesOnRequest(w) {
			out = append(out, w)
		}
	}
	return out
}

// sharers returns the workloads of the other live routes for r's Service
// port, on this doorman's other ports, as they are now.
func (rs *routeSet) sharers(r Route) []Workload {
	m := rs.p.Load()
	if m == nil {
		return nil
	}
	return sharersOf(r, (*m)[r.Key()])
}
