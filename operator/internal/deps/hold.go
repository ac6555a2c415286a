package deps

import (
	"slices"
	"time"
)

// Hold says whether a workload is kept awake by its dependents.
type Hold struct {
	// Held is true while a declared dependent holds it: do not pause it.
	Held bool
	// By are the direct dependents holding it, sorted: "kept awake by
	// preview-42/api".
	By []Key
	// Roots are the workloads awake on their own account the hold comes
	// from, sorted; the same as By unless the hold passes through workloads
	// that are themselves only held.
	Roots []Key
	// ReleasedAt is the latest moment a declared dependent stopped being
	// awake (paused, was deleted, or dropped the edge) as far as the graph
	// saw; zero if never. While Running and not held, the idle clock counts
	// from the later of lastActivity and this. It is not activity: it must
	// not call off a pause or wake anything.
	ReleasedAt time.Time
	// RecheckAt, when not zero, is when the hold may end with no change to
	// any object: every root is Running and holds only until its own idle
	// deadline, the earliest of which this is. Requeue for then.
	RecheckAt time.Time
}

// Hold works out whether key is held awake at now (package doc, "Holding
// awake"). It walks only key's awake dependents and what key reaches.
func (g *Graph) Hold(key Key, now time.Time) Hold {
	g.mu.RLock()
	defer g.mu.RUnlock()
	nd := g.nodes[key]
	if nd == nil || !nd.exists {
		return Hold{}
	}
	h := Hold{ReleasedAt: nd.released}
	awakeBy := g.awakeDependents(key)
	if len(awakeBy) == 0 {
		return h
	}
	// Every awake workload but key with a path of awake workloads to key.
	paths := walk(awakeBy, func(k Key) []Key {
		return slices.DeleteFunc(g.awakeDependents(k), func(x Key) bool { return x == key })
	})
	var reach map[Key]struct{} // what key leads to; only needed for a cycle
	var worthy []Key
	timeBound := true
	for k := range paths {
		other := g.nodes[k]
		if holdClass(other.phase) == 2 || other.idleUntil.After(now) {
			worthy = append(worthy, k)
			timeBound = timeBound && holdClass(other.phase) == 1
			continue
		}
		if reach == nil {
			reach = g.reach(key)
		}
		if _, back := reach[k]; !back {
			worthy = append(worthy, k)
			timeBound = false
		}
	}
	if len(worthy) == 0 {
		return h
	}
	// What the roots hold, through awake workloads on a path to key.
	holding := walk(worthy, func(k Key) []Key {
		var out []Key
		for _, to := range g.nodes[k].declared {
			if _, on := paths[to]; on && g.allowed(k, to) {
				out = append(out, to)
			}
		}
		return out
	})
	for _, k := range awakeBy {
		if _, ok := holding[k]; ok {
			h.By = append(h.By, k)
		}
	}
	slices.SortFunc(h.By, compareKeys)
	slices.SortFunc(worthy, compareKeys)
	h.Held, h.Roots = len(h.By) > 0, worthy
	if h.Held && timeBound {
		for _, k := range worthy {
			if t := g.nodes[k].idleUntil; h.RecheckAt.IsZero() || t.Before(h.RecheckAt) {
				h.RecheckAt = t
			}
		}
	}
	return h
}

// awakeDependents are key's direct declared dependents that exist, are
// awake and are allowed to hold it. The caller holds the lock.
func (g *Graph) awakeDependents(key Key) []Key {
	var out []Key
	for from := range g.nodes[key].declaredBy {
		if nd := g.nodes[from]; nd.exists && awake(nd.phase) && g.allowed(from, key) {
			out = append(out, from)
		}
	}
	return out
}

// reach is every existing workload key leads to by honoured declared
// edges, key itself included if a cycle leads back. The caller holds the
// lock.
func (g *Graph) reach(key Key) map[Key]struct{} {
	return walk(g.honoured(key), g.honoured)
}

// honoured are k's declared edges that are honoured. The caller holds the
// lock.
func (g *Graph) honoured(k Key) []Key {
	var out []Key
	for _, to := range g.nodes[k].declared {
		if g.problem(k, to) == "" {
			out = append(out, to)
		}
	}
	return out
}

// walk visits starts and everything next leads to, each once, breadth
// first, and returns what it visited.
func walk(starts []Key, next func(Key) []Key) map[Key]struct{} {
	seen := make(map[Key]struct{}, len(starts))
	queue := slices.Clone(starts)
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		queue = append(queue, next(k)...)
	}
	return seen
}

// Holder is how a hold reads in describe and in the condition: "kept awake
// by preview-42/api", naming the roots too when they differ.
func (h Hold) Holder() string {
	if !h.Held {
		return ""
	}
	s := "kept awake by " + joinKeys(h.By)
	if !slices.Equal(h.By, h.Roots) {
		s += " (for " + joinKeys(h.Roots) + ")"
	}
	return s
}
