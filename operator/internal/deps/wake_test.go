package deps

import (
	"testing"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestWake(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces map[string]string
		ws         []w
		origin     string
		wake       []string // in order
		refused    []string // "from>to:Problem"
	}{
		{
			name:   "waking the front end wakes its dependencies and theirs, all at once",
			ws:     []w{{key: "p/front", deps: []string{"api"}}, {key: "p/api", deps: []string{"db", "cache"}}, {key: "p/db"}, {key: "p/cache"}},
			origin: "p/front",
			wake:   []string{"p/api", "p/cache", "p/db"},
		},
		{
			name:   "a workload with no dependencies wakes nothing else",
			ws:     []w{{key: "p/front"}},
			origin: "p/front",
		},
		{
			name:   "a workload the graph has never seen wakes nothing",
			origin: "p/ghost",
		},
		{
			name:   "a two-member cycle wakes the other member once and never the origin",
			ws:     []w{{key: "p/a", deps: []string{"b"}}, {key: "p/b", deps: []string{"a"}}},
			origin: "p/a",
			wake:   []string{"p/b"},
		},
		{
			name:   "a diamond wakes the shared dependency once",
			ws:     []w{{key: "p/top", deps: []string{"left", "right"}}, {key: "p/left", deps: []string{"db"}}, {key: "p/right", deps: []string{"db"}}, {key: "p/db"}},
			origin: "p/top",
			wake:   []string{"p/left", "p/right", "p/db"},
		},
		{
			name:   "a dependency on itself wakes nothing and refuses nothing",
			ws:     []w{{key: "p/api", deps: []string{"api", "p/api", "db"}}, {key: "p/db"}},
			origin: "p/api",
			wake:   []string{"p/db"},
		},
		{
			name:    "a dependency with no ManagedWorkload is refused and the others still wake",
			ws:      []w{{key: "p/api", deps: []string{"postgres", "cache"}}, {key: "p/cache"}},
			origin:  "p/api",
			wake:    []string{"p/cache"},
			refused: []string{"p/api>p/postgres:DependencyNotFound"},
		},
		{
			name:    "a missing dependency in a namespace that would refuse it is not found",
			ws:      []w{{key: "p/api", deps: []string{"shared/db"}}},
			origin:  "p/api",
			refused: []string{"p/api>shared/db:DependencyNotFound"},
		},
		{
			name:    "a refused edge deep in the chain stops only itself",
			ws:      []w{{key: "p/front", deps: []string{"api"}}, {key: "p/api", deps: []string{"gone", "db"}}, {key: "p/db"}},
			origin:  "p/front",
			wake:    []string{"p/api", "p/db"},
			refused: []string{"p/api>p/gone:DependencyNotFound"},
		},
		{
			name:       "an edge refused on one path is not reported when another path wakes its target",
			namespaces: map[string]string{"r": "p", "q": "r"},
			ws:         []w{{key: "p/front", deps: []string{"q/db", "r/mid"}}, {key: "r/mid", deps: []string{"q/db"}}, {key: "q/db"}},
			origin:     "p/front",
			wake:       []string{"r/mid", "q/db"},
		},
		{
			name:    "an edge refused on every path is reported once per edge",
			ws:      []w{{key: "p/front", deps: []string{"api", "q/db"}}, {key: "p/api", deps: []string{"q/db"}}, {key: "q/db"}},
			origin:  "p/front",
			wake:    []string{"p/api"},
			refused: []string{"p/front>q/db:DependencyNotAllowed", "p/api>q/db:DependencyNotAllowed"},
		},
		{
			name:   "learned dependencies wake too, and so do their learned dependencies",
			ws:     []w{{key: "p/front", learned: []string{"p/api"}}, {key: "p/api", learned: []string{"p/db"}, deps: []string{"cache"}}, {key: "p/db"}, {key: "p/cache"}},
			origin: "p/front",
			wake:   []string{"p/api", "p/cache", "p/db"},
		},
		{
			name:    "a learned dependency in a namespace that does not allow it is refused",
			ws:      []w{{key: "p/front", learned: []string{"q/api"}}, {key: "q/api"}},
			origin:  "p/front",
			refused: []string{"p/front>q/api:DependencyNotAllowed"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := build(t, tc.namespaces, tc.ws...).Wake(key(tc.origin))
			var woken, refused []string
			for _, x := range plan.Wake {
				woken = append(woken, x.Key.String())
			}
			for _, e := range plan.Refused {
				refused = append(refused, e.From.String()+">"+e.To.String()+":"+string(e.Problem))
			}
			eq(t, "woken", woken, tc.wake)
			eq(t, "refused", refused, tc.refused)
			eq(t, "origin", plan.Origin, key(tc.origin))
		})
	}
}

// A dependency in another namespace wakes only if its Namespace's
// dependents-from lets the dependent's namespace; the others wake anyway.
func TestWakeAcrossNamespaces(t *testing.T) {
	for _, tc := range []struct{ dependentsFrom, want string }{
		{"", "DependencyNotAllowed"},
		{"q, r", "DependencyNotAllowed"},
		{"q,p", "woken"},
		{"*", "woken"},
		{"preview-*", "DependencyNotAllowed"},
	} {
		g := build(t, nil, w{key: "p/api", deps: []string{"shared/db", "cache"}}, w{key: "p/cache"}, w{key: "shared/db"})
		a, _ := ParseDependentsFrom(tc.dependentsFrom)
		g.SetNamespace("shared", a)
		plan := g.Wake(key("p/api"))
		got := "woken"
		if len(plan.Refused) > 0 {
			got = string(plan.Refused[0].Problem)
		}
		eq(t, tc.dependentsFrom, got, tc.want)
		eq(t, tc.dependentsFrom+": p/cache still wakes", plan.Wake[0].Key, key("p/cache"))
	}
}

func TestWakeOfACycleOf50WakesTheOther49Once(t *testing.T) {
	g := build(t, nil, cycle("p", 50, napwakev1alpha1.PhasePaused)...)
	plan := g.Wake(key("p/c0"))
	if len(plan.Wake) != 49 {
		t.Fatalf("woke %d, want 49", len(plan.Wake))
	}
	for i, x := range plan.Wake {
		eq(t, "target", x.Key, key("p/"+name(i+1)))
		eq(t, "via", x.Via, key("p/"+name(i)))
		eq(t, "phase", x.Phase, napwakev1alpha1.PhasePaused)
	}
}

func TestWakeSaysWhichEdgeReachedEachTarget(t *testing.T) {
	g := build(t, nil,
		w{key: "p/front", deps: []string{"api"}, learned: []string{"p/search"}},
		w{key: "p/api", deps: []string{"db"}},
		w{key: "p/db", phase: napwakev1alpha1.PhasePaused},
		w{key: "p/search"},
	)
	eq(t, "plan", g.Wake(key("p/front")).Wake, []Target{
		{Key: key("p/api"), Via: key("p/front"), Phase: napwakev1alpha1.PhaseRunning},
		{Key: key("p/search"), Via: key("p/front"), Learned: true, Phase: napwakev1alpha1.PhaseRunning},
		{Key: key("p/db"), Via: key("p/api"), Phase: napwakev1alpha1.PhasePaused},
	})
}

func TestResolve(t *testing.T) {
	g := build(t, map[string]string{"shared": "p"},
		w{key: "p/api", deps: []string{"api", "shared/db", "gone", "q/cache"}, learned: []string{"p/db", "shared/db", "p/api"}},
		w{key: "shared/db"}, w{key: "q/cache"}, w{key: "p/db"},
	)
	eq(t, "edges", g.Resolve(key("p/api")), []Edge{
		{From: key("p/api"), To: key("p/api"), Problem: Self},
		{From: key("p/api"), To: key("p/gone"), Problem: NotFound},
		{From: key("p/api"), To: key("q/cache"), Problem: NotAllowed},
		{From: key("p/api"), To: key("shared/db")},
		// shared/db is declared, and p/api is itself: neither is learned.
		{From: key("p/api"), To: key("p/db"), Learned: true},
	})
	eq(t, "refusals", Refusals(g.Resolve(key("p/api"))), []Edge{
		{From: key("p/api"), To: key("p/gone"), Problem: NotFound},
		{From: key("p/api"), To: key("q/cache"), Problem: NotAllowed},
	})
}
