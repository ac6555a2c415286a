package render

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// heldPrefix starts what the Dependencies condition says of a hold.
const heldPrefix = "kept awake by "

// HeldBy is "kept awake by preview-42/api" while the operator says a
// dependent holds mw awake (its Dependencies condition), else empty.
func HeldBy(mw *napwakev1alpha1.ManagedWorkload) string {
	c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionDependencies)
	if c == nil || mw.Status.Phase != napwakev1alpha1.PhaseRunning {
		return ""
	}
	i := strings.Index(c.Message, heldPrefix)
	if i < 0 {
		return ""
	}
	held, _, _ := strings.Cut(c.Message[i:], "; ")
	return oneLine(held)
}

// refusal is why the operator refuses the edge to key, from the
// Dependencies condition ("no such ManagedWorkload"), or empty.
func refusal(mw *napwakev1alpha1.ManagedWorkload, key string) string {
	c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionDependencies)
	if c == nil || c.Status != metav1.ConditionFalse {
		return ""
	}
	_, after, ok := strings.Cut(c.Message, key+" (")
	if !ok {
		return ""
	}
	why, _, _ := strings.Cut(after, ")")
	return why
}

// edge is one dependency of a workload as describe and status show it.
type edge struct {
	key     string // namespace/name
	learned bool
	seen    *metav1.Time
}

// edgesOf lists mw's declared dependencies, then its learned ones not
// declared too, each once.
func edgesOf(mw *napwakev1alpha1.ManagedWorkload) []edge {
	var out []edge
	seen := map[string]bool{mw.Namespace + "/" + mw.Name: true}
	for _, d := range mw.Spec.Dependencies {
		ns := d.Namespace
		if ns == "" {
			ns = mw.Namespace
		}
		if k := ns + "/" + d.Name; !seen[k] {
			seen[k] = true
			out = append(out, edge{key: k})
		}
	}
	if l := mw.Status.Dependencies; l != nil {
		for i := range l.Learned {
			d := &l.Learned[i]
			if k := d.Namespace + "/" + d.Name; !seen[k] {
				seen[k] = true
				out = append(out, edge{key: k, learned: true, seen: &d.LastSeen})
			}
		}
	}
	return out
}

// describeDependencies lists each edge: declared or learned (when last
// seen), and its state: the dependency's phase when deps has it, "no such
// ManagedWorkload" when deps says it is missing, and the operator's refusal.
func describeDependencies(w io.Writer, mw *napwakev1alpha1.ManagedWorkload, deps map[string]*napwakev1alpha1.ManagedWorkload, o Options) {
	fmt.Fprintln(w, "Dependencies:")
	if held := HeldBy(mw); held != "" {
		fmt.Fprintf(w, "  Held: %s, so it does not pause for idleness\n", held)
	}
	edges := edgesOf(mw)
	if len(edges) == 0 {
		fmt.Fprintln(w, "  none of its own")
		return
	}
	dt := table{indent: "  "}
	dt.add(txt("DEPENDENCY"), txt("EDGE"), txt("STATE"))
	for _, e := range edges {
		kind := "declared (wakes with it, kept awake by it)"
		if e.learned {
			kind = "learned, last seen " + since(o.Now, &e.seen.Time) + " ago (wakes with it)"
		}
		state := txt("-")
		if d, known := deps[e.key]; known {
			if d == nil {
				state = cell{"no such ManagedWorkload", yellow}
			} else {
				state = phaseCell(d.Status.Phase)
			}
		}
		if why := refusal(mw, e.key); why != "" {
			state = cell{"refused: " + clean(why), yellow}
		}
		dt.add(txt(e.key), txt(kind), state)
	}
	dt.write(w, o)
}

// environments orders mws so that each workload no other listed one
// depends on comes first, followed by its dependencies (declared and
// learned, transitively) among the listed ones, each listed once; depth is
// each one's depth under the environment's first member. Workloads only
// reached through a cycle start an environment of their own.
func environments(mws []napwakev1alpha1.ManagedWorkload) (order []int, depth []int) {
	index := map[string]int{}
	for i := range mws {
		index[mws[i].Namespace+"/"+mws[i].Name] = i
	}
	children := make([][]int, len(mws))
	dependent := make([]bool, len(mws))
	for i := range mws {
		for _, e := range edgesOf(&mws[i]) {
			if j, ok := index[e.key]; ok {
				children[i] = append(children[i], j)
				dependent[j] = true
			}
		}
	}
	placed := make([]bool, len(mws))
	depth = make([]int, len(mws))
	var visit func(i, d int)
	visit = func(i, d int) {
		placed[i], depth[i] = true, d
		order = append(order, i)
		for _, j := range children[i] {
			if !placed[j] {
				visit(j, d+1)
			}
		}
	}
	for pass := range 2 { // roots first, then what only a cycle reaches
		for i := range mws {
			if !placed[i] && (pass == 1 || !dependent[i]) {
				visit(i, 0)
			}
		}
	}
	return order, depth
}
