package deps

import (
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// TestAffected checks what each change tells the caller to enqueue. The
// closure follows declared edges whatever the namespaces allow: enqueueing
// one workload too many costs a reconcile, one too few a stale hold.
func TestAffected(t *testing.T) {
	base := []w{
		{key: "p/front", deps: []string{"api"}},
		{key: "p/api", deps: []string{"db", "shared/db"}, learned: []string{"p/search"}},
		{key: "p/db"},
		{key: "p/search"},
		{key: "p/x", deps: []string{"new"}},
		{key: "p/y", learned: []string{"p/new"}},
		{key: "shared/db", deps: []string{"cache"}},
		{key: "shared/cache"},
	}
	for _, tc := range []struct {
		name   string
		change func(g *Graph) []Key
		want   []string
	}{
		{
			name: "a dependent pausing moves the hold of everything it leads to",
			change: func(g *Graph) []Key {
				return g.Upsert(key("p/front"), w{key: "p/front", deps: []string{"api"}, phase: paused}.node(), t0)
			},
			want: []string{"p/api", "p/db", "shared/cache", "shared/db"},
		},
		{
			name: "running to pausing moves holds too: a pausing member of a cycle holds",
			change: func(g *Graph) []Key {
				return g.Upsert(key("p/api"), w{key: "p/api", deps: []string{"db", "shared/db"}, phase: pausing}.node(), t0)
			},
			want: []string{"p/db", "shared/cache", "shared/db"},
		},
		{
			name: "a new idle deadline alone moves nothing: RecheckAt covers it",
			change: func(g *Graph) []Key {
				return g.Upsert(key("p/front"), w{key: "p/front", deps: []string{"api"}, idle: time.Hour}.node(), t0)
			},
		},
		{
			name: "a learned edge moves nothing: it never holds",
			change: func(g *Graph) []Key {
				return g.Upsert(key("p/api"), w{key: "p/api", deps: []string{"db", "shared/db"}, learned: []string{"p/search", "p/front"}}.node(), t0)
			},
		},
		{
			name: "a changed declared list moves the old and new dependencies and what they lead to",
			change: func(g *Graph) []Key {
				return g.Upsert(key("p/front"), w{key: "p/front", deps: []string{"search"}}.node(), t0)
			},
			want: []string{"p/api", "p/db", "p/search", "shared/cache", "shared/db"},
		},
		{
			name:   "a new workload moves those that named it, declared or learned",
			change: func(g *Graph) []Key { return g.Upsert(key("p/new"), w{key: "p/new"}.node(), t0) },
			want:   []string{"p/x", "p/y"},
		},
		{
			name:   "a deleted workload moves its dependents and what it leads to",
			change: func(g *Graph) []Key { return g.Delete(key("p/api"), t0) },
			want:   []string{"p/db", "p/front", "shared/cache", "shared/db"},
		},
		{
			name:   "deleting what is not there moves nothing",
			change: func(g *Graph) []Key { return g.Delete(key("p/ghost"), t0) },
		},
		{
			name:   "a namespace allowing others moves its workloads they name, their dependents and what they lead to",
			change: func(g *Graph) []Key { return g.SetNamespace("shared", AllowAny()) },
			want:   []string{"p/api", "shared/cache", "shared/db"},
		},
		{
			name: "the same allowance again moves nothing",
			change: func(g *Graph) []Key {
				g.SetNamespace("shared", AllowNamespaces("p"))
				return g.SetNamespace("shared", AllowNamespaces("p"))
			},
		},
		{
			name:   "forgetting a namespace nobody set moves nothing",
			change: func(g *Graph) []Key { return g.DeleteNamespace("shared") },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, nil, base...)
			eq(t, "affected", tc.change(g), keys(tc.want...))
		})
	}
}

func TestPlaceholdersGoWhenNothingNamesThem(t *testing.T) {
	g := build(t, nil, w{key: "p/api", deps: []string{"gone"}, learned: []string{"p/lost"}})
	eq(t, "len", g.Len(), 1)
	eq(t, "nodes", len(g.nodes), 3)
	g.Upsert(key("p/api"), w{key: "p/api"}.node(), t0)
	eq(t, "nodes after the edges went", len(g.nodes), 1)
	g.Upsert(key("p/db"), w{key: "p/db"}.node(), t0)
	g.Upsert(key("p/api"), w{key: "p/api", deps: []string{"db"}}.node(), t0)
	g.Delete(key("p/db"), t0)
	eq(t, "len", g.Len(), 1)
	eq(t, "a deleted dependency is not found", g.Resolve(key("p/api"))[0].Problem, NotFound)
	g.Delete(key("p/api"), t0)
	eq(t, "nodes when all are gone", len(g.nodes), 0)
}

func TestNodeFrom(t *testing.T) {
	mw := &napwakev1alpha1.ManagedWorkload{}
	mw.Namespace, mw.Name = "p", "api"
	mw.Spec.Dependencies = []napwakev1alpha1.DependencyRef{{Name: "db"}}
	mw.Status.Phase = paused
	mw.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: metav1.NewTime(t0)}
	mw.Status.PauseAt = &metav1.Time{Time: t0.Add(time.Minute)}
	mw.Status.Dependencies = &napwakev1alpha1.DependenciesStatus{Learned: []napwakev1alpha1.LearnedDependency{{Namespace: "q", Name: "x"}}}
	n := NodeFrom(mw)
	eq(t, "key", KeyOf(mw), key("p/api"))
	eq(t, "node", n, Node{
		Declared: mw.Spec.Dependencies, Learned: mw.Status.Dependencies.Learned, Phase: paused,
		IdleUntil: t0.Add(time.Minute), PausedSince: t0,
	})
	mw.Status.Phase = resuming
	eq(t, "no pause time while awake", NodeFrom(mw).PausedSince, time.Time{})
}

// TestConcurrentUse runs writers and readers at once; go test -race judges.
func TestConcurrentUse(t *testing.T) {
	g := build(t, nil, cycle("p", 20, running)...)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 200 {
				x := w{key: "p/" + name((i*5+j)%20), deps: []string{name((j + 1) % 20)}, phase: []napwakev1alpha1.Phase{running, paused}[j%2]}
				g.Upsert(key(x.key), x.node(), t0)
				if j%50 == 0 {
					g.SetNamespace("p", AllowNamespaces(name(j)))
				}
			}
		}()
		go func() {
			defer wg.Done()
			for j := range 200 {
				g.Wake(key("p/" + name(j%20)))
				g.Hold(key("p/"+name(j%20)), t0)
				g.Resolve(key("p/" + name(j%20)))
			}
		}()
	}
	wg.Wait()
	eq(t, "len", g.Len(), 20)
}

func TestANewWorkloadInACycleMovesItsDependentsAndAllTheyLeadTo(t *testing.T) {
	g := build(t, nil, w{key: "p/a", deps: []string{"b"}}, w{key: "p/c"})
	eq(t, "affected", g.Upsert(key("p/b"), w{key: "p/b", deps: []string{"a"}}.node(), t0), keys("p/a"))
	g = build(t, nil, w{key: "p/a", deps: []string{"b"}}, w{key: "p/c"})
	a := w{key: "p/a", deps: []string{"b", "c"}}
	g.Upsert(key(a.key), a.node(), t0)
	eq(t, "affected", g.Upsert(key("p/b"), w{key: "p/b", deps: []string{"a"}}.node(), t0), keys("p/a", "p/c"))
}
