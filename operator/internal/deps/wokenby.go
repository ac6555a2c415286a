package deps

import (
	"slices"
	"time"
)

// Waker is a wake that reaches a workload through its dependents: the
// workload's own reason to wake (source "dependent").
type Waker struct {
	// Origin is the workload whose wake reaches it: one woken on its own
	// account where there is one ("woken with preview-42/front").
	Origin Key
	// Via is the direct dependent the wake comes through; Origin itself
	// when the edge is direct ("through preview-42/api").
	Via Key
	// At is when Origin's wake began (its status.resumedAt).
	At time.Time
}

// String is how a Waker reads in an event: "preview-42/front" or
// "preview-42/front (through preview-42/api)".
func (w Waker) String() string {
	if w.Via == w.Origin || w.Via.Name == "" {
		return w.Origin.String()
	}
	return w.Origin.String() + " (through " + w.Via.String() + ")"
}

// WokenBy finds a wake begun after since (a paused workload's
// status.pause.startedAt) of a workload whose wake plan reaches key: one of
// its dependents, declared or learned, theirs, and so on, through honoured
// edges only. It is the same reach as Wake, walked backwards, so a workload
// learns from persisted state alone (every member's resumedAt) that a
// dependent woke, whatever order the reconciles come in and across a
// restart. Among such wakes it prefers one that was not itself a
// dependent's, then the nearest. ok is false when none is found.
//
// It never loops a cycle: a wake counts only if it began after key's pause
// began, and a workload woken as a dependent begins its wake after the wake
// that woke it, so a cycle's members wake each other at most once a pause.
func (g *Graph) WokenBy(key Key, since time.Time) (Waker, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if nd := g.nodes[key]; nd == nil || !nd.exists {
		return Waker{}, false
	}
	via := map[Key]Key{key: {}}
	queue := []Key{key}
	var found *Waker
	for len(queue) > 0 {
		to := queue[0]
		queue = queue[1:]
		for _, from := range g.dependents(to) {
			if _, seen := via[from]; seen {
				continue
			}
			v := via[to]
			if to == key {
				v = from
			}
			via[from] = v
			queue = append(queue, from)
			nd := g.nodes[from]
			if !nd.resumedAt.After(since) {
				continue
			}
			if found == nil {
				found = &Waker{Origin: from, Via: v, At: nd.resumedAt}
			}
			if !nd.asDependent {
				return Waker{Origin: from, Via: v, At: nd.resumedAt}, true
			}
		}
	}
	if found == nil {
		return Waker{}, false
	}
	return *found, true
}

// dependents are the existing workloads with an honoured edge, declared or
// learned, to key, sorted. The caller holds the lock.
func (g *Graph) dependents(key Key) []Key {
	nd := g.nodes[key]
	var out []Key
	for _, set := range []map[Key]struct{}{nd.declaredBy, nd.learnedBy} {
		for from := range set {
			if f := g.nodes[from]; f != nil && f.exists && g.allowed(from, key) {
				out = append(out, from)
			}
		}
	}
	slices.SortFunc(out, compareKeys)
	return slices.Compact(out)
}
