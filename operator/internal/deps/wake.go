package deps

import (
	"slices"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Problem says why an edge is not honoured; empty when it is.
type Problem string

// Problems an edge can have.
const (
	// NotFound: the dependency has no ManagedWorkload.
	NotFound Problem = napwakev1alpha1.ReasonDependencyNotFound
	// NotAllowed: the dependency's Namespace does not list the dependent's
	// namespace in napwake.dev/dependents-from.
	NotAllowed Problem = napwakev1alpha1.ReasonDependencyNotAllowed
	// Self: a workload named itself. Harmless, and ignored.
	Self Problem = "DependsOnItself"
)

// Edge is one dependency of one workload and whether it is honoured.
type Edge struct {
	From, To Key
	// Learned is true for an edge from status.dependencies.learned.
	Learned bool
	// Problem is empty for an honoured edge.
	Problem Problem
}

// Target is one workload a wake reaches.
type Target struct {
	Key Key
	// Via is the workload whose edge reached it first: the woken workload
	// itself, or a dependency in between (for the event: "woken with
	// preview-42/front, through preview-42/api").
	Via Key
	// Learned is true when the edge that reached it was learned.
	Learned bool
	// Phase is its phase as the graph last saw it: the caller wakes those
	// that are Paused or Pausing and leaves the others be.
	Phase napwakev1alpha1.Phase
}

// WakePlan is everything one wake reaches.
type WakePlan struct {
	// Origin is the workload being woken.
	Origin Key
	// Wake lists every dependency to wake, transitively, each once, in the
	// order reached (breadth first, declared edges before learned, each
	// workload's edges sorted). It never holds Origin.
	Wake []Target
	// Refused lists the edges met on the way that are not honoured, for
	// events, and whose target is not woken by another edge; an edge to
	// itself is left out (the condition reports it). Refusals never stop the
	// other wakes.
	Refused []Edge
}

// Wake plans the wake of key: its declared and learned dependencies,
// theirs, and so on. Cycles end where they meet a workload already
// reached, so every workload is planned once. It walks only what key
// reaches, never the whole graph. The plan is already transitive: a
// workload woken as a dependency (source "dependent") must not plan a wake
// of its own, or a chain of n costs n plans and their writes twice over.
func (g *Graph) Wake(key Key) WakePlan {
	g.mu.RLock()
	defer g.mu.RUnlock()
	plan := WakePlan{Origin: key}
	seen := map[Key]struct{}{key: {}}
	var refused []Edge
	queue := []Key{key}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		g.edges(from, func(e Edge) {
			if e.Problem != "" {
				if e.Problem != Self {
					refused = append(refused, e)
				}
				return
			}
			if _, ok := seen[e.To]; ok {
				return
			}
			seen[e.To] = struct{}{}
			plan.Wake = append(plan.Wake, Target{Key: e.To, Via: from, Learned: e.Learned, Phase: g.nodes[e.To].phase})
			queue = append(queue, e.To)
		})
	}
	for _, e := range refused {
		if _, woken := seen[e.To]; !woken {
			plan.Refused = append(plan.Refused, e)
		}
	}
	return plan
}

// Resolve lists key's own edges with their problems: its declared
// dependencies (and an edge to itself, if it names itself) first, then its
// learned ones, each sorted. Use it for the Dependencies condition on every
// reconcile and for describe.
func (g *Graph) Resolve(key Key) []Edge {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []Edge
	g.edges(key, func(e Edge) { out = append(out, e) })
	return out
}

// edges calls f with each of from's edges, declared first. The caller
// holds the lock.
func (g *Graph) edges(from Key, f func(Edge)) {
	nd := g.nodes[from]
	if nd == nil || !nd.exists {
		return
	}
	if nd.self {
		f(Edge{From: from, To: from, Problem: Self})
	}
	for _, to := range nd.declared {
		f(Edge{From: from, To: to, Problem: g.problem(from, to)})
	}
	for _, to := range nd.learned {
		f(Edge{From: from, To: to, Learned: true, Problem: g.problem(from, to)})
	}
}

// problem says why the edge from → to is not honoured, if it is not. A
// dependency that does not exist is NotFound whatever its namespace says.
func (g *Graph) problem(from, to Key) Problem {
	if nd := g.nodes[to]; nd == nil || !nd.exists {
		return NotFound
	}
	if !g.allowed(from, to) {
		return NotAllowed
	}
	return ""
}

// Refusals keeps the declared edges of edges that are refused: what turns
// the Dependencies condition False. A learned edge that is refused wakes
// nothing, but the user never named it, so it does not count; nor does an
// edge to itself.
func Refusals(edges []Edge) []Edge {
	return slices.DeleteFunc(slices.Clone(edges), func(e Edge) bool {
		return e.Learned || e.Problem == "" || e.Problem == Self
	})
}
