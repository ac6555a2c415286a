package deps

import (
	"slices"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// model is FuzzGraph's brute-force twin of a Graph: the same workloads,
// kept the simplest way.
type model struct {
	g     *Graph
	keys  []Key
	nodes map[Key]w // w.deps and w.learned hold full keys here
	allow map[string]Allow
	woke  map[Key]bool // began a wake at t0 (status.resumedAt)
}

func newModel() *model {
	m := &model{g: NewGraph(), nodes: map[Key]w{}, allow: map[string]Allow{}, woke: map[Key]bool{}}
	for _, ns := range []string{"p", "q"} {
		for i := range 4 {
			m.keys = append(m.keys, Key{Namespace: ns, Name: name(i)})
		}
	}
	return m
}

// apply reads one operation: op's low two bits say which (0, 1 upsert; 2
// delete; 3 namespace q's allowance), its next bits the phase, the idle
// deadline and whether it began a wake at t0; x the workload; the masks which of the eight it declares and
// learns.
func (m *model) apply(op, x, declared, learned byte) {
	k := m.keys[int(x)%len(m.keys)]
	switch op % 4 {
	case 2:
		m.g.Delete(k, t0)
		delete(m.nodes, k)
		delete(m.woke, k)
	case 3:
		a := []Allow{{}, AllowNamespaces("p"), AllowAny()}[int(declared)%3]
		m.g.SetNamespace("q", a)
		m.allow["q"] = a
	default:
		n := w{key: k.String(), phase: []napwakev1alpha1.Phase{running, resuming, pausing, paused}[(op>>2)%4]}
		if op&0x10 != 0 {
			n.idle = time.Minute
		}
		for i, to := range m.keys {
			if declared&(1<<i) != 0 {
				n.deps = append(n.deps, to.String())
			}
			if learned&(1<<i) != 0 {
				n.learned = append(n.learned, to.String())
			}
		}
		node := n.node()
		if op&0x20 != 0 {
			node.ResumedAt = t0
		}
		m.g.Upsert(k, node, t0)
		m.nodes[k], m.woke[k] = n, op&0x20 != 0
	}
}

// honoured is an edge the model says wakes (and, declared, holds).
func (m *model) honoured(from, to Key) bool {
	_, exists := m.nodes[to]
	return exists && from != to && (from.Namespace == to.Namespace || m.allow[to.Namespace].Allows(from.Namespace))
}

// next is where k's honoured edges lead; declared only, or learned too.
func (m *model) next(k Key, learnedToo bool) []Key {
	n, ok := m.nodes[k]
	if !ok {
		return nil
	}
	refs := n.deps
	if learnedToo {
		refs = append(slices.Clone(refs), n.learned...)
	}
	var out []Key
	for _, r := range refs {
		if to := key(r); m.honoured(k, to) {
			out = append(out, to)
		}
	}
	return out
}

// reach is every workload reachable from start through nodes that pass ok
// (start itself is not tested), start included.
func (m *model) reach(start Key, learnedToo bool, ok func(Key) bool) map[Key]bool {
	seen := map[Key]bool{start: true}
	var visit func(Key)
	visit = func(k Key) {
		for _, to := range m.next(k, learnedToo) {
			if !seen[to] && ok(to) {
				seen[to] = true
				visit(to)
			}
		}
	}
	visit(start)
	return seen
}

func (m *model) checkWake(t *testing.T, x Key) {
	t.Helper()
	plan := m.g.Wake(x)
	want := m.reach(x, true, func(Key) bool { return true })
	if _, exists := m.nodes[x]; !exists {
		want = map[Key]bool{x: true}
	}
	got := map[Key]bool{}
	for _, tg := range plan.Wake {
		if tg.Key == x || got[tg.Key] || !want[tg.Key] {
			t.Fatalf("wake of %v: %v in %v (reachable: %v)", x, tg.Key, plan.Wake, want)
		}
		got[tg.Key] = true
	}
	if len(got) != len(want)-1 {
		t.Fatalf("wake of %v: %v, reachable %v", x, plan.Wake, want)
	}
	for _, e := range plan.Refused {
		if want[e.To] || m.honoured(e.From, e.To) {
			t.Fatalf("wake of %v refused %+v", x, e)
		}
	}
}

func (m *model) checkHold(t *testing.T, x Key) {
	t.Helper()
	h := m.g.Hold(x, t0)
	awakeNotX := func(k Key) bool { n, ok := m.nodes[k]; return ok && k != x && awake(n.node().Phase) }
	fromX := m.reach(x, false, func(Key) bool { return true })
	var by, roots []Key
	for _, r := range m.keys {
		if !awakeNotX(r) {
			continue
		}
		n := m.nodes[r].node()
		self := n.Phase == resuming || n.Phase == pausing || n.IdleUntil.After(t0)
		if !self && fromX[r] {
			continue
		}
		held := m.reach(r, false, awakeNotX)
		leadsToX := false
		for k := range held {
			if slices.Contains(m.next(k, false), x) {
				leadsToX = true
				if !slices.Contains(by, k) {
					by = append(by, k)
				}
			}
		}
		if leadsToX {
			roots = append(roots, r)
		}
	}
	slices.SortFunc(by, compareKeys)
	if !slices.Equal(h.By, by) || !slices.Equal(h.Roots, roots) || h.Held != (len(by) > 0) {
		t.Fatalf("hold of %v: got by %v roots %v, want by %v roots %v", x, h.By, h.Roots, by, roots)
	}
}

// checkWokenBy checks WokenBy against Wake: x is found woken (since a
// minute before t0) exactly when some workload that began a wake at t0 has
// x in its wake plan, and the origin named is one of those.
func (m *model) checkWokenBy(t *testing.T, x Key) {
	t.Helper()
	var wakers []Key
	for k, woke := range m.woke {
		if !woke || k == x {
			continue
		}
		for _, tg := range m.g.Wake(k).Wake {
			if tg.Key == x {
				wakers = append(wakers, k)
			}
		}
	}
	got, ok := m.g.WokenBy(x, t0.Add(-time.Minute))
	if _, exists := m.nodes[x]; !exists {
		if ok {
			t.Fatalf("WokenBy(%v) of a workload that does not exist: %v", x, got)
		}
		return
	}
	if ok != (len(wakers) > 0) || (ok && !slices.Contains(wakers, got.Origin)) {
		t.Fatalf("WokenBy(%v) = %v, %v; the wakes whose plans reach it: %v", x, got, ok, wakers)
	}
}
