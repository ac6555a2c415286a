package deps

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// t0 is "now" in every test.
var t0 = time.Date(2026, 10, 23, 18, 0, 0, 0, time.UTC)

// w is one ManagedWorkload in a test graph: key "ns/name"; deps and learned
// as spec.dependencies would say them ("name" or "ns/name"); phase (empty:
// Running); idle is IdleUntil relative to t0 (zero: run out).
type w struct {
	key     string
	deps    []string
	learned []string
	phase   napwakev1alpha1.Phase
	idle    time.Duration
}

func (x w) node() Node {
	n := Node{Phase: x.phase}
	if n.Phase == "" {
		n.Phase = napwakev1alpha1.PhaseRunning
	}
	if x.idle != 0 {
		n.IdleUntil = t0.Add(x.idle)
	}
	for _, d := range x.deps {
		ns, name, ok := strings.Cut(d, "/")
		if !ok {
			ns, name = "", d
		}
		n.Declared = append(n.Declared, napwakev1alpha1.DependencyRef{Namespace: ns, Name: name})
	}
	for _, l := range x.learned {
		k := key(l)
		n.Learned = append(n.Learned, napwakev1alpha1.LearnedDependency{Namespace: k.Namespace, Name: k.Name})
	}
	return n
}

// key reads "ns/name".
func key(s string) Key {
	ns, name, _ := strings.Cut(s, "/")
	return Key{Namespace: ns, Name: name}
}

func keys(ss ...string) []Key {
	var out []Key
	for _, s := range ss {
		out = append(out, key(s))
	}
	return out
}

// build makes a graph of ws, with namespaces' dependents-from values.
func build(t testing.TB, namespaces map[string]string, ws ...w) *Graph {
	t.Helper()
	g := NewGraph()
	for ns, v := range namespaces {
		a, problems := ParseDependentsFrom(v)
		if len(problems) > 0 {
			t.Fatalf("namespace %s: %v", ns, problems)
		}
		g.SetNamespace(ns, a)
	}
	for _, x := range ws {
		g.Upsert(key(x.key), x.node(), t0.Add(-time.Hour))
	}
	return g
}

// cycle is n workloads in namespace ns, c0 → c1 → … → c(n-1) → c0.
func cycle(ns string, n int, phase napwakev1alpha1.Phase) []w {
	out := make([]w, n)
	for i := range out {
		out[i] = w{key: ns + "/" + name(i), deps: []string{name((i + 1) % n)}, phase: phase}
	}
	return out
}

func name(i int) string { return "c" + strconv.Itoa(i) }

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}
