package proxy

import (
	"net/netip"
	"sync"
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
// writes it; connection handlers read it and subscribe to its next change,
// so a held connection moves the moment a pod is Ready, never by polling.
type Table struct {
	mu        sync.Mutex
	endpoints map[ServiceKey][]netip.AddrPort
	subs      map[ServiceKey]map[uint64]func()
	nextSub   uint64
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{endpoints: map[ServiceKey][]netip.AddrPort{}, subs: map[ServiceKey]map[uint64]func(){}}
}

// Endpoints returns the Ready endpoints of k.
func (t *Table) Endpoints(k ServiceKey) []netip.AddrPort {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.endpoints[k]
}

// Subscribe returns the Ready endpoints of k and calls fn once on their
// next change, unless cancel is called first. A held connection waits
// this way without a goroutine of its own.
func (t *Table) Subscribe(k ServiceKey, fn func()) (eps []netip.AddrPort, cancel func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nextSub++
	id := t.nextSub
	m, ok := t.subs[k]
	if !ok {
		m = map[uint64]func(){}
		t.subs[k] = m
	}
	m[id] = fn
	return t.endpoints[k], func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if m, ok := t.subs[k]; ok {
			delete(m, id)
			if len(m) == 0 {
				delete(t.subs, k)
			}
		}
	}
}

// Waiting returns how many waits on k's next change are registered: the
// held connections of k at their wait.
func (t *Table) Waiting(k ServiceKey) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.subs[k])
}

// SetEndpoints replaces the Ready endpoints of k and wakes its waiters.
// The caller has already applied the dial rules.
func (t *Table) SetEndpoints(k ServiceKey, eps []netip.AddrPort) {
	t.mu.Lock()
	subs := t.subs[k]
	delete(t.subs, k)
	defer func() {
		for _, fn := range subs {
			fn()
		}
	}()
	defer t.mu.Unlock()
	if len(eps) == 0 {
		delete(t.endpoints, k)
	} else {
		t.endpoints[k] = eps
	}
}
