package deps

import (
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

const (
	running  = napwakev1alpha1.PhaseRunning
	resuming = napwakev1alpha1.PhaseResuming
	pausing  = napwakev1alpha1.PhasePausing
	paused   = napwakev1alpha1.PhasePaused
)

func TestHold(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces map[string]string
		ws         []w
		of         string
		by, roots  []string
		recheck    time.Duration // RecheckAt relative to t0; zero for none
	}{
		{
			name:    "a running dependent with time left holds its dependency until its own deadline",
			ws:      []w{{key: "p/api", deps: []string{"db"}, idle: 10 * time.Minute}, {key: "p/db"}},
			of:      "p/db",
			by:      []string{"p/api"},
			roots:   []string{"p/api"},
			recheck: 10 * time.Minute,
		},
		{
			name:  "a running dependent past its own idle deadline still holds a dependency it does not depend back on",
			ws:    []w{{key: "p/api", deps: []string{"db"}}, {key: "p/db"}},
			of:    "p/db",
			by:    []string{"p/api"},
			roots: []string{"p/api"},
		},
		{
			name: "a learned edge never holds",
			ws:   []w{{key: "p/api", learned: []string{"p/db"}, phase: resuming}, {key: "p/db"}},
			of:   "p/db",
		},
		{
			name:  "a hold passes through a dependency that is only held: front keeps api, api keeps db",
			ws:    []w{{key: "p/front", deps: []string{"api"}, idle: time.Minute}, {key: "p/api", deps: []string{"db"}}, {key: "p/db"}},
			of:    "p/db",
			by:    []string{"p/api"},
			roots: []string{"p/api", "p/front"},
		},
		{
			name: "a hold does not pass through a paused dependency",
			ws:   []w{{key: "p/front", deps: []string{"api"}, idle: time.Minute}, {key: "p/api", deps: []string{"db"}, phase: paused}, {key: "p/db"}},
			of:   "p/db",
		},
		{
			name: "a two-member cycle past both idle deadlines holds nothing, so it pauses",
			ws:   []w{{key: "p/a", deps: []string{"b"}}, {key: "p/b", deps: []string{"a"}}},
			of:   "p/a",
		},
		{
			name:    "in a cycle the member with time left holds the other",
			ws:      []w{{key: "p/a", deps: []string{"b"}, idle: 5 * time.Minute}, {key: "p/b", deps: []string{"a"}}},
			of:      "p/b",
			by:      []string{"p/a"},
			roots:   []string{"p/a"},
			recheck: 5 * time.Minute,
		},
		{
			name: "in a cycle the member with time left is not held up by the other",
			ws:   []w{{key: "p/a", deps: []string{"b"}, idle: 5 * time.Minute}, {key: "p/b", deps: []string{"a"}}},
			of:   "p/a",
		},
		{
			name:  "in a cycle a pausing member holds the other",
			ws:    []w{{key: "p/a", deps: []string{"b"}, phase: pausing}, {key: "p/b", deps: []string{"a"}}},
			of:    "p/b",
			by:    []string{"p/a"},
			roots: []string{"p/a"},
		},
		{
			name:  "a cycle past its deadlines still holds a dependency outside it",
			ws:    []w{{key: "p/a", deps: []string{"b"}}, {key: "p/b", deps: []string{"a", "c"}}, {key: "p/c"}},
			of:    "p/c",
			by:    []string{"p/b"},
			roots: []string{"p/a", "p/b"},
		},
		{
			name:  "a dependent outside a cycle holds its members",
			ws:    []w{{key: "p/front", deps: []string{"a"}}, {key: "p/a", deps: []string{"b"}}, {key: "p/b", deps: []string{"a"}}},
			of:    "p/b",
			by:    []string{"p/a"},
			roots: []string{"p/front"},
		},
		{
			name: "a dependent in a namespace the dependency does not allow holds nothing",
			ws:   []w{{key: "q/api", deps: []string{"p/db"}, phase: resuming}, {key: "p/db"}},
			of:   "p/db",
		},
		{
			name:       "a dependent in a namespace the dependency allows holds",
			namespaces: map[string]string{"p": "*"},
			ws:         []w{{key: "q/api", deps: []string{"p/db"}, phase: resuming}, {key: "p/db"}},
			of:         "p/db",
			by:         []string{"q/api"},
			roots:      []string{"q/api"},
		},
		{
			name:    "two dependents with time left recheck at the earlier deadline",
			ws:      []w{{key: "p/a", deps: []string{"db"}, idle: 9 * time.Minute}, {key: "p/b", deps: []string{"db"}, idle: 3 * time.Minute}, {key: "p/db"}},
			of:      "p/db",
			by:      []string{"p/a", "p/b"},
			roots:   []string{"p/a", "p/b"},
			recheck: 3 * time.Minute,
		},
		{
			name:  "no recheck when one root holds until an object changes",
			ws:    []w{{key: "p/a", deps: []string{"db"}, idle: 9 * time.Minute}, {key: "p/b", deps: []string{"db"}, phase: resuming}, {key: "p/db"}},
			of:    "p/db",
			by:    []string{"p/a", "p/b"},
			roots: []string{"p/a", "p/b"},
		},
		{
			name: "a workload the graph has never seen is not held",
			of:   "p/ghost",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := build(t, tc.namespaces, tc.ws...).Hold(key(tc.of), t0)
			eq(t, "held", h.Held, len(tc.by) > 0)
			eq(t, "by", h.By, keys(tc.by...))
			eq(t, "roots", h.Roots, keys(tc.roots...))
			var recheck time.Time
			if tc.recheck != 0 {
				recheck = t0.Add(tc.recheck)
			}
			eq(t, "recheck", h.RecheckAt, recheck)
		})
	}
}

func TestEveryAwakePhaseHoldsAndPausedDoesNot(t *testing.T) {
	for _, phase := range []napwakev1alpha1.Phase{running, resuming, pausing, paused, ""} {
		g := build(t, nil, w{key: "p/api", deps: []string{"db"}}, w{key: "p/db"})
		g.Upsert(key("p/api"), Node{Declared: w{deps: []string{"db"}}.node().Declared, Phase: phase}, t0)
		eq(t, string(phase)+" holds", g.Hold(key("p/db"), t0).By != nil, phase != paused)
	}
}

func TestHoldInACycleOf50(t *testing.T) {
	ws := cycle("p", 50, running)
	g := build(t, nil, ws...)
	for i := range ws {
		if h := g.Hold(key(ws[i].key), t0); h.Held {
			t.Fatalf("%s is held by %v in a cycle past its deadlines", ws[i].key, h.By)
		}
	}
	ws[7].idle = time.Minute
	g = build(t, nil, ws...)
	for i := range ws {
		h := g.Hold(key(ws[i].key), t0)
		want := i != 7
		eq(t, ws[i].key+" held", h.Held, want)
		if want {
			eq(t, ws[i].key+" by", h.By, keys("p/"+name((i+49)%50)))
			eq(t, ws[i].key+" roots", len(h.Roots), 1)
		}
	}
}

func TestHolder(t *testing.T) {
	eq(t, "not held", Hold{}.Holder(), "")
	eq(t, "direct", Hold{Held: true, By: keys("preview-42/api"), Roots: keys("preview-42/api")}.Holder(), "kept awake by preview-42/api")
	eq(t, "through", Hold{Held: true, By: keys("p/api"), Roots: keys("p/front")}.Holder(), "kept awake by p/api (for p/front)")
}

// The release time: the latest moment a declared dependent stopped being
// awake, as the graph saw it.
func TestReleasedAt(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	api := w{key: "p/api", deps: []string{"db"}}
	db := key("p/db")
	for _, tc := range []struct {
		name  string
		steps func(g *Graph)
		want  time.Time
	}{
		{
			name:  "a dependent that never stopped releases nothing",
			steps: func(g *Graph) {},
		},
		{
			name: "a dependent pausing releases its dependency when it is seen Paused",
			steps: func(g *Graph) {
				g.Upsert(key(api.key), w{key: api.key, deps: api.deps, phase: pausing}.node(), at(1))
				g.Upsert(key(api.key), w{key: api.key, deps: api.deps, phase: paused}.node(), at(2))
				g.Upsert(key(api.key), w{key: api.key, deps: api.deps, phase: paused}.node(), at(3))
			},
			want: at(2),
		},
		{
			name: "the last of two dependents to stop sets the time",
			steps: func(g *Graph) {
				g.Upsert(key("p/web"), w{key: "p/web", deps: []string{"db"}}.node(), at(1))
				g.Upsert(key(api.key), w{key: api.key, deps: api.deps, phase: paused}.node(), at(4))
				g.Upsert(key("p/web"), w{key: "p/web", deps: []string{"db"}, phase: paused}.node(), at(6))
			},
			want: at(6),
		},
		{
			name:  "a dependent deleted while awake releases at its deletion",
			steps: func(g *Graph) { g.Delete(key(api.key), at(5)) },
			want:  at(5),
		},
		{
			name:  "a dependent that drops the edge while awake releases at that moment",
			steps: func(g *Graph) { g.Upsert(key(api.key), w{key: api.key}.node(), at(7)) },
			want:  at(7),
		},
		{
			name: "a dependent first seen paused releases at its pause's start",
			steps: func(g *Graph) {
				n := w{key: "p/old", deps: []string{"db"}, phase: paused}.node()
				n.PausedSince = at(-30)
				g.Upsert(key("p/old"), n, at(1))
			},
			want: at(-30),
		},
		{
			name: "a dependent in a namespace that may not hold it releases nothing",
			steps: func(g *Graph) {
				g.Upsert(key("q/api"), w{key: "q/api", deps: []string{"p/db"}}.node(), at(1))
				g.Upsert(key("q/api"), w{key: "q/api", deps: []string{"p/db"}, phase: paused}.node(), at(2))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, nil, api, w{key: "p/db"})
			tc.steps(g)
			eq(t, "releasedAt", g.Hold(db, t0).ReleasedAt, tc.want)
		})
	}
}
