package deps

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Key names a ManagedWorkload.
type Key = types.NamespacedName

// Node is what the graph keeps of one ManagedWorkload. NodeFrom fills it
// from the object.
type Node struct {
	// Declared is spec.dependencies; an empty namespace is the workload's own.
	Declared []napwakev1alpha1.DependencyRef
	// Learned is status.dependencies.learned.
	Learned []napwakev1alpha1.LearnedDependency
	// Phase is status.phase; empty counts as Running (its pods still run).
	Phase napwakev1alpha1.Phase
	// IdleUntil is when its own idle clock runs out while Running
	// (lastActivity + idleAfter, Hold.ReleasedAt folded in). It must never be
	// moved by a hold, or a cycle would hold itself up; zero counts as
	// already run out.
	IdleUntil time.Time
	// PausedSince is when it stopped being awake, if it is not awake and
	// the caller knows (status.pause.startedAt is a lower bound). Only read
	// the first time the graph sees the workload: after that the graph
	// records the moment it sees the workload stop being awake.
	PausedSince time.Time
	// ResumedAt is when its last wake began (status.resumedAt): a wake
	// after a dependency's pause began wakes that dependency (WokenBy).
	ResumedAt time.Time
	// AsDependent is true when its last wake was a dependent's
	// (status.lastActivitySource "dependent"): WokenBy names the wake's
	// origin, not a dependency woken with it, where it can.
	AsDependent bool
}

// NodeFrom reads a Node from a ManagedWorkload: spec.dependencies,
// status.dependencies.learned, status.phase, status.pauseAt as IdleUntil
// (so the reconciler must not move pauseAt while the workload is held; it
// may clear it), status.pause.startedAt as PausedSince, status.resumedAt
// and whether status.lastActivitySource is "dependent".
func NodeFrom(mw *napwakev1alpha1.ManagedWorkload) Node {
	n := Node{Declared: mw.Spec.Dependencies, Phase: mw.Status.Phase,
		AsDependent: mw.Status.LastActivitySource == napwakev1alpha1.SourceDependent}
	if mw.Status.ResumedAt != nil {
		n.ResumedAt = mw.Status.ResumedAt.Time
	}
	if d := mw.Status.Dependencies; d != nil {
		n.Learned = d.Learned
	}
	if mw.Status.PauseAt != nil {
		n.IdleUntil = mw.Status.PauseAt.Time
	}
	if p := mw.Status.Pause; p != nil && !awake(n.Phase) {
		n.PausedSince = p.StartedAt.Time
	}
	return n
}

// KeyOf is the Key of a ManagedWorkload.
func KeyOf(mw *napwakev1alpha1.ManagedWorkload) Key {
	return Key{Namespace: mw.Namespace, Name: mw.Name}
}

// Graph indexes the dependency edges of many ManagedWorkloads, both ways.
// The zero Graph is not usable; call NewGraph. All methods are safe for
// concurrent use: writers (Upsert, Delete, SetNamespace, DeleteNamespace)
// take the lock alone, readers share it.
type Graph struct {
	mu         sync.RWMutex
	nodes      map[Key]*node
	namespaces map[string]Allow
}

// node is one workload, or a placeholder for a name some edge points at that
// has no ManagedWorkload (exists false), kept while edges point at it.
type node struct {
	exists    bool
	declared  []Key // resolved, sorted, no repeats, not itself
	learned   []Key // the same, and none that is declared too
	self      bool  // it declares a dependency on itself
	phase     napwakev1alpha1.Phase
	idleUntil time.Time
	// resumedAt and asDependent are Node's ResumedAt and AsDependent.
	resumedAt   time.Time
	asDependent bool
	// released is the latest time a declared dependent stopped being awake
	// (paused, went away or dropped the edge) as far as the graph saw.
	released   time.Time
	declaredBy map[Key]struct{}
	learnedBy  map[Key]struct{}
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{nodes: map[Key]*node{}, namespaces: map[string]Allow{}}
}

// Len is how many ManagedWorkloads the graph holds.
func (g *Graph) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n := 0
	for _, nd := range g.nodes {
		if nd.exists {
			n++
		}
	}
	return n
}

// awake is the design's "awake": Running, Resuming or Pausing. A workload
// with no phase yet has not been paused, so its pods run.
func awake(p napwakev1alpha1.Phase) bool { return p != napwakev1alpha1.PhasePaused }

// holdClass groups phases by what they mean to a hold; a change of class
// may change who is held.
func holdClass(p napwakev1alpha1.Phase) int {
	switch p {
	case napwakev1alpha1.PhasePaused:
		return 0
	case napwakev1alpha1.PhaseResuming, napwakev1alpha1.PhasePausing:
		return 2
	}
	return 1
}

// allowed reports whether an edge from one workload to another is honoured
// by the target's namespace. The caller holds the lock.
func (g *Graph) allowed(from, to Key) bool {
	return from.Namespace == to.Namespace || g.namespaces[to.Namespace].Allows(from.Namespace)
}

func compareKeys(a, b Key) int {
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// resolve turns a Node's references into sorted, distinct keys, leaving out
// the workload itself (reported by self) and learned edges that are
// declared too.
func resolve(key Key, n Node) (declared, learned []Key, self bool) {
	for _, r := range n.Declared {
		k := Key{Namespace: r.Namespace, Name: r.Name}
		if k.Namespace == "" {
			k.Namespace = key.Namespace
		}
		if k == key {
			self = true
			continue
		}
		declared = append(declared, k)
	}
	slices.SortFunc(declared, compareKeys)
	declared = slices.Compact(declared)
	for _, l := range n.Learned {
		k := Key{Namespace: l.Namespace, Name: l.Name}
		if k == key || k.Name == "" {
			continue
		}
		if _, found := slices.BinarySearchFunc(declared, k, compareKeys); !found {
			learned = append(learned, k)
		}
	}
	slices.SortFunc(learned, compareKeys)
	return declared, slices.Compact(learned), self
}

// get returns key's node, creating a placeholder. The caller holds the lock.
func (g *Graph) get(key Key) *node {
	if nd := g.nodes[key]; nd != nil {
		return nd
	}
	g.nodes[key] = &node{}
	return g.nodes[key]
}

// forget drops a placeholder nothing points at any more.
func (g *Graph) forget(key Key) {
	if nd := g.nodes[key]; nd != nil && !nd.exists && len(nd.declaredBy) == 0 && len(nd.learnedBy) == 0 {
		delete(g.nodes, key)
	}
}

// link replaces from's edges of one kind (declared or learned) by to,
// keeping the reverse sets in step.
func (g *Graph) link(from Key, old, to []Key, reverse func(*node) *map[Key]struct{}) {
	for _, k := range old {
		if _, keep := slices.BinarySearchFunc(to, k, compareKeys); !keep {
			delete(*reverse(g.nodes[k]), from)
			g.forget(k)
		}
	}
	for _, k := range to {
		set := reverse(g.get(k))
		if *set == nil {
			*set = map[Key]struct{}{}
		}
		(*set)[from] = struct{}{}
	}
}

func declaredBy(nd *node) *map[Key]struct{} { return &nd.declaredBy }
func learnedBy(nd *node) *map[Key]struct{}  { return &nd.learnedBy }

// release records that from stopped holding each of to at t.
func (g *Graph) release(from Key, to []Key, t time.Time) {
	for _, k := range to {
		if nd := g.nodes[k]; nd != nil && g.allowed(from, k) && t.After(nd.released) {
			nd.released = t
		}
	}
}

// Upsert records one ManagedWorkload as it is now. now is when the caller
// saw it: if it was awake and is not any more, its declared dependencies
// count as released at now. It returns the other workloads whose decisions
// (condition, hold) the change may have moved, sorted: enqueue them.
func (g *Graph) Upsert(key Key, n Node, now time.Time) []Key {
	declared, learned, self := resolve(key, n)
	g.mu.Lock()
	defer g.mu.Unlock()
	nd := g.get(key)
	existed, wasAwake, oldDeclared := nd.exists, nd.exists && awake(nd.phase), nd.declared
	isAwake := awake(n.Phase)
	switch {
	case wasAwake && !isAwake:
		g.release(key, oldDeclared, now)
		g.release(key, declared, now)
	case wasAwake:
		g.release(key, difference(oldDeclared, declared), now)
	case !existed && !isAwake && !n.PausedSince.IsZero():
		g.release(key, declared, n.PausedSince)
	}
	moved := !existed || holdClass(nd.phase) != holdClass(n.Phase) || !slices.Equal(oldDeclared, declared)
	g.link(key, oldDeclared, declared, declaredBy)
	g.link(key, nd.learned, learned, learnedBy)
	nd.exists, nd.declared, nd.learned, nd.self = true, declared, learned, self
	nd.phase, nd.idleUntil = n.Phase, n.IdleUntil
	nd.resumedAt, nd.asDependent = n.ResumedAt, n.AsDependent

	out := map[Key]struct{}{}
	if !existed {
		g.dependentsInto(key, nd, out)
	}
	if moved {
		g.closureInto(append(slices.Clone(oldDeclared), declared...), out)
	}
	return sortedKeys(out, key)
}

// Delete forgets a ManagedWorkload that is gone. If it was awake, its
// declared dependencies count as released at now. It returns the workloads
// whose decisions may have moved, sorted.
func (g *Graph) Delete(key Key, now time.Time) []Key {
	g.mu.Lock()
	defer g.mu.Unlock()
	nd := g.nodes[key]
	if nd == nil || !nd.exists {
		return nil
	}
	if awake(nd.phase) {
		g.release(key, nd.declared, now)
	}
	out := map[Key]struct{}{}
	g.dependentsInto(key, nd, out)
	g.closureInto(nd.declared, out)
	g.link(key, nd.declared, nil, declaredBy)
	g.link(key, nd.learned, nil, learnedBy)
	*nd = node{declaredBy: nd.declaredBy, learnedBy: nd.learnedBy, released: nd.released}
	g.forget(key)
	return sortedKeys(out, key)
}

// SetNamespace records a Namespace's parsed dependents-from. It returns the
// workloads whose decisions may have moved: those in other namespaces that
// depend on its workloads, its workloads with such dependents, and what
// they hold.
func (g *Graph) SetNamespace(name string, a Allow) []Key {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.namespaces[name]; ok && old.equal(a) {
		return nil
	}
	g.namespaces[name] = a
	return g.crossNamespace(name)
}

// DeleteNamespace forgets a Namespace: it allows no other namespace.
func (g *Graph) DeleteNamespace(name string) []Key {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.namespaces[name]; !ok {
		return nil
	}
	delete(g.namespaces, name)
	return g.crossNamespace(name)
}

// crossNamespace collects what a change of namespace ns's allowance may
// move. It scans every node: namespaces change rarely.
func (g *Graph) crossNamespace(ns string) []Key {
	out := map[Key]struct{}{}
	for k, nd := range g.nodes {
		if k.Namespace != ns {
			continue
		}
		cross := false
		for _, set := range []map[Key]struct{}{nd.declaredBy, nd.learnedBy} {
			for from := range set {
				if from.Namespace != ns {
					out[from] = struct{}{}
					cross = true
				}
			}
		}
		if cross && nd.exists {
			g.closureInto([]Key{k}, out)
		}
	}
	return sortedKeys(out, Key{})
}

// dependentsInto adds every workload with an edge to key.
func (g *Graph) dependentsInto(key Key, nd *node, out map[Key]struct{}) {
	for from := range nd.declaredBy {
		out[from] = struct{}{}
	}
	for from := range nd.learnedBy {
		out[from] = struct{}{}
	}
	delete(out, key)
}

// closureInto adds starts and everything they reach by declared edges: the
// workloads a change of hold at the start may reach.
func (g *Graph) closureInto(starts []Key, out map[Key]struct{}) {
	for k := range walk(starts, func(k Key) []Key {
		if nd := g.nodes[k]; nd != nil {
			return nd.declared
		}
		return nil
	}) {
		out[k] = struct{}{}
	}
}

// difference is the keys of a not in b; both sorted.
func difference(a, b []Key) []Key {
	var out []Key
	for _, k := range a {
		if _, found := slices.BinarySearchFunc(b, k, compareKeys); !found {
			out = append(out, k)
		}
	}
	return out
}

// sortedKeys returns the set's keys sorted, without skip.
func sortedKeys(set map[Key]struct{}, skip Key) []Key {
	delete(set, skip)
	if len(set) == 0 {
		return nil
	}
	out := make([]Key, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.SortFunc(out, compareKeys)
	return out
}
