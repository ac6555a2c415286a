package deps

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// maxListed bounds how many workloads one list in a message names: 64
// dependencies would make a message nobody reads.
const maxListed = 10

// Condition builds the Dependencies condition of a workload from its own
// edges (Graph.Resolve) and its hold (Graph.Hold), at generation, changing
// at now (meta.SetStatusCondition keeps the old time when nothing moved).
//
// It is False when a declared dependency is refused: reason
// DependencyNotFound if any is missing, else DependencyNotAllowed; the
// message names each refused dependency and why, and says the others still
// wake. Otherwise it is True, DependenciesResolved, naming what wakes with
// it. Either way the message ends with who keeps it awake, if anyone, and
// says a dependency on itself is ignored. Learned edges that are refused do
// not turn it False (the user never named them).
func Condition(edges []Edge, hold Hold, generation int64, now time.Time) metav1.Condition {
	c := metav1.Condition{
		Type:               napwakev1alpha1.ConditionDependencies,
		Status:             metav1.ConditionTrue,
		Reason:             napwakev1alpha1.ReasonDependenciesResolved,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
	}
	var parts []string
	if refused := Refusals(edges); len(refused) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, napwakev1alpha1.ReasonDependencyNotAllowed
		why := make([]string, 0, len(refused))
		for _, e := range refused {
			if e.Problem == NotFound {
				c.Reason = napwakev1alpha1.ReasonDependencyNotFound
			}
			why = append(why, e.To.String()+" ("+Explain(e)+")")
		}
		parts = append(parts, "cannot wake "+list(why)+"; the others still wake")
	} else {
		var declared, learned []string
		for _, e := range edges {
			switch {
			case e.Problem != "":
			case e.Learned:
				learned = append(learned, e.To.String())
			default:
				declared = append(declared, e.To.String())
			}
		}
		switch {
		case len(declared) > 0 && len(learned) > 0:
			parts = append(parts, "wakes "+list(declared)+", and as learned "+list(learned))
		case len(declared) > 0:
			parts = append(parts, "wakes "+list(declared))
		case len(learned) > 0:
			parts = append(parts, "wakes as learned "+list(learned))
		default:
			parts = append(parts, "no dependencies")
		}
	}
	for _, e := range edges {
		if e.Problem == Self {
			parts = append(parts, "its dependency on itself is ignored")
		}
	}
	if s := hold.Holder(); s != "" {
		parts = append(parts, s)
	}
	c.Message = strings.Join(parts, "; ")
	return c
}

// Explain says why an edge is refused, for events and describe; empty for
// an honoured edge.
func Explain(e Edge) string {
	switch e.Problem {
	case NotFound:
		return "no such ManagedWorkload"
	case NotAllowed:
		return fmt.Sprintf("namespace %s does not list %s in %s", e.To.Namespace, e.From.Namespace, napwakev1alpha1.AnnotationDependentsFrom)
	case Self:
		return "itself"
	}
	return ""
}

// list joins names, at most maxListed of them.
func list(names []string) string {
	if len(names) > maxListed {
		return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return strings.Join(names, ", ")
}

// joinKeys joins keys as list does.
func joinKeys(keys []Key) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.String()
	}
	return list(names)
}
