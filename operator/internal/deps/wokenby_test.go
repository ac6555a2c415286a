package deps

import (
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestWokenBy(t *testing.T) {
	paused := napwakev1alpha1.PhasePaused
	resuming := napwakev1alpha1.PhaseResuming
	frontWoke := map[string]time.Duration{"p/front": time.Minute}
	cross := []w{{key: "p/front", deps: []string{"shared/db"}, phase: resuming}, {key: "shared/db", phase: paused}}
	for _, tc := range []struct {
		name       string
		namespaces map[string]string
		ws         []w
		// woke are workloads' wakes relative to t0; dependent marks those
		// woken as a dependent.
		woke      map[string]time.Duration
		dependent []string
		key       string
		since     time.Duration // the key's pause began at t0+since
		want      string        // Waker.String(), or "" for none
	}{
		{
			name: "a wake of the direct dependent after the pause began wakes it",
			ws:   []w{{key: "p/front", deps: []string{"api"}, phase: resuming}, {key: "p/api", phase: paused}},
			woke: map[string]time.Duration{"p/front": time.Minute},
			key:  "p/api",
			want: "p/front",
		},
		{
			name: "a wake from before the pause began wakes nothing",
			ws:   []w{{key: "p/front", deps: []string{"api"}}, {key: "p/api", phase: paused}},
			woke: map[string]time.Duration{"p/front": -time.Minute},
			key:  "p/api",
			want: "",
		},
		{
			name: "the end of a chain names the origin, through the direct dependent, whatever woke in between",
			ws: []w{{key: "p/front", deps: []string{"api"}, phase: resuming}, {key: "p/api", deps: []string{"db"}, phase: resuming},
				{key: "p/db", phase: paused}},
			woke:      map[string]time.Duration{"p/front": time.Minute, "p/api": time.Minute + time.Second},
			dependent: []string{"p/api"},
			key:       "p/db",
			want:      "p/front (through p/api)",
		},
		{
			name: "the end of a chain wakes before the member in between does",
			ws: []w{{key: "p/front", deps: []string{"api"}, phase: resuming}, {key: "p/api", deps: []string{"db"}, phase: paused},
				{key: "p/db", phase: paused}},
			woke: map[string]time.Duration{"p/front": time.Minute},
			key:  "p/db",
			want: "p/front (through p/api)",
		},
		{name: "a learned edge wakes too", ws: []w{{key: "p/front", learned: []string{"p/api"}, phase: resuming}, {key: "p/api", phase: paused}},
			woke: frontWoke, key: "p/api", want: "p/front"},
		{name: "a dependent in a namespace that is not allowed wakes nothing", namespaces: map[string]string{"shared": "other"},
			ws: cross, woke: frontWoke, key: "shared/db", want: ""},
		{name: "a dependent in an allowed namespace wakes it", namespaces: map[string]string{"shared": "p"},
			ws: cross, woke: frontWoke, key: "shared/db", want: "p/front"},
		{
			name:  "a cycle whose members all paused after their last wake wakes nothing",
			ws:    cycle("q", 50, paused),
			woke:  map[string]time.Duration{"q/c7": -time.Hour, "q/c8": -time.Hour},
			key:   "q/c9",
			since: -time.Minute,
			want:  "",
		},
		{
			name: "in a cycle of 50 a wake of any member reaches every other",
			ws:   cycle("p", 50, paused),
			woke: map[string]time.Duration{"p/c10": time.Minute},
			key:  "p/c9",
			want: "p/c10 (through p/c8)", // c10 → … → c8 → c9
		},
		{
			name: "a workload the graph has never seen is woken by nothing",
			key:  "p/ghost",
			want: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGraph()
			for ns, v := range tc.namespaces {
				a, _ := ParseDependentsFrom(v)
				g.SetNamespace(ns, a)
			}
			for _, x := range tc.ws {
				n := x.node()
				if d, ok := tc.woke[x.key]; ok {
					n.ResumedAt = t0.Add(d)
				}
				for _, k := range tc.dependent {
					n.AsDependent = n.AsDependent || k == x.key
				}
				g.Upsert(key(x.key), n, t0)
			}
			got, ok := g.WokenBy(key(tc.key), t0.Add(tc.since))
			if tc.want == "" {
				if ok {
					t.Fatalf("woken by %v, want nothing", got)
				}
				return
			}
			if !ok || got.String() != tc.want {
				t.Fatalf("woken by %q (%v), want %q", got.String(), ok, tc.want)
			}
			if want := t0.Add(tc.woke[got.Origin.String()]); !got.At.Equal(want) {
				t.Errorf("at %v, want the origin's wake %v", got.At, want)
			}
		})
	}
}
