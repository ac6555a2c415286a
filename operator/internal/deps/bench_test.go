package deps

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// The scale: 2,000 ManagedWorkloads with 4 edges each, as 100
// environments of 20 in their own namespaces. Member i of an environment
// declares i+1, i+2 and i+3 and has learned i+4 (modulo 20), so waking any
// member wakes the other 19, through cycles and diamonds.
const (
	benchEnvs    = 100
	benchMembers = 20
)

func benchNode(env, i int, phase napwakev1alpha1.Phase) (Key, Node) {
	ns := "env-" + strconv.Itoa(env)
	member := func(j int) string { return "m" + strconv.Itoa((i+j)%benchMembers) }
	n := Node{Phase: phase, IdleUntil: t0.Add(time.Minute)}
	for j := 1; j <= 3; j++ {
		n.Declared = append(n.Declared, napwakev1alpha1.DependencyRef{Name: member(j)})
	}
	n.Learned = []napwakev1alpha1.LearnedDependency{{Namespace: ns, Name: member(4)}}
	return Key{Namespace: ns, Name: member(0)}, n
}

func benchGraph(b *testing.B) *Graph {
	b.Helper()
	g := NewGraph()
	for env := range benchEnvs {
		for i := range benchMembers {
			k, n := benchNode(env, i, paused)
			g.Upsert(k, n, t0)
		}
	}
	if g.Len() != benchEnvs*benchMembers {
		b.Fatalf("%d workloads", g.Len())
	}
	return g
}

// BenchmarkWakeChainOf20 plans one wake that reaches 20 workloads.
func BenchmarkWakeChainOf20(b *testing.B) {
	g := benchGraph(b)
	origin := Key{Namespace: "env-42", Name: "m0"}
	b.ReportAllocs()
	for b.Loop() {
		if p := g.Wake(origin); len(p.Wake) != benchMembers-1 {
			b.Fatalf("woke %d", len(p.Wake))
		}
	}
}

// BenchmarkHoldInAnAwakeEnvironment asks whether one member of a running
// environment of 20 is held: the whole environment is on its paths.
func BenchmarkHoldInAnAwakeEnvironment(b *testing.B) {
	g := benchGraph(b)
	for i := range benchMembers {
		k, n := benchNode(42, i, running)
		g.Upsert(k, n, t0)
	}
	of := Key{Namespace: "env-42", Name: "m7"}
	b.ReportAllocs()
	for b.Loop() {
		if !g.Hold(of, t0).Held {
			b.Fatal("not held")
		}
	}
}

// BenchmarkWokenByInAPausedEnvironment is what each paused member's
// reconcile asks: did a dependent's wake reach it? Its whole environment is
// walked backwards, and none woke.
func BenchmarkWokenByInAPausedEnvironment(b *testing.B) {
	g := benchGraph(b)
	of := Key{Namespace: "env-42", Name: "m7"}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := g.WokenBy(of, t0); ok {
			b.Fatal("woken")
		}
	}
}

// BenchmarkUpsertOneOf2000 is the incremental update one informer event
// costs: a member pausing and waking, each returning what to enqueue.
func BenchmarkUpsertOneOf2000(b *testing.B) {
	g := benchGraph(b)
	k, asleep := benchNode(42, 0, paused)
	_, up := benchNode(42, 0, running)
	b.ReportAllocs()
	for b.Loop() {
		g.Upsert(k, up, t0)
		g.Upsert(k, asleep, t0)
	}
}

// BenchmarkBuild2000 fills the graph from nothing, as at start-up.
func BenchmarkBuild2000(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		benchGraph(b)
	}
}

// BenchmarkPeerEncode20WakePatches is the peer: only encoding the 20
// status patches those wakes write, the cheapest part of each API write
// (the round trip to the API server and etcd costs far more). The graph's
// share of a wake is negligible if Wake costs well below this.
func BenchmarkPeerEncode20WakePatches(b *testing.B) {
	type status struct {
		Phase              napwakev1alpha1.Phase `json:"phase"`
		ResumedAt          time.Time             `json:"resumedAt"`
		LastActivity       time.Time             `json:"lastActivity"`
		LastActivitySource string                `json:"lastActivitySource"`
	}
	type patch struct {
		Status status `json:"status"`
	}
	b.ReportAllocs()
	for b.Loop() {
		for range benchMembers {
			p := patch{Status: status{Phase: resuming, ResumedAt: t0, LastActivity: t0, LastActivitySource: napwakev1alpha1.SourceDependent}}
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}
