package deps

import (
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestCondition(t *testing.T) {
	api := key("preview-42/api")
	edge := func(to string, learned bool, p Problem) Edge {
		return Edge{From: api, To: key(to), Learned: learned, Problem: p}
	}
	held := Hold{Held: true, By: keys("preview-42/front"), Roots: keys("preview-42/front")}
	for _, tc := range []struct {
		name    string
		edges   []Edge
		hold    Hold
		reason  string
		message string
	}{
		{
			name:    "a workload with no dependencies says so",
			reason:  napwakev1alpha1.ReasonDependenciesResolved,
			message: "no dependencies",
		},
		{
			name:    "honoured declared and learned dependencies are named",
			edges:   []Edge{edge("preview-42/db", false, ""), edge("shared/cache", false, ""), edge("preview-42/search", true, "")},
			reason:  napwakev1alpha1.ReasonDependenciesResolved,
			message: "wakes preview-42/db, shared/cache, and as learned preview-42/search",
		},
		{
			name:    "only learned dependencies",
			edges:   []Edge{edge("preview-42/search", true, "")},
			reason:  napwakev1alpha1.ReasonDependenciesResolved,
			message: "wakes as learned preview-42/search",
		},
		{
			name:    "a missing dependency is named, and the others still wake",
			edges:   []Edge{edge("preview-42/db", false, ""), edge("preview-42/postgress", false, NotFound)},
			reason:  napwakev1alpha1.ReasonDependencyNotFound,
			message: "cannot wake preview-42/postgress (no such ManagedWorkload); the others still wake",
		},
		{
			name:    "a dependency its namespace does not allow names the namespace and the annotation",
			edges:   []Edge{edge("shared/db", false, NotAllowed)},
			reason:  napwakev1alpha1.ReasonDependencyNotAllowed,
			message: "cannot wake shared/db (namespace shared does not list preview-42 in napwake.dev/dependents-from); the others still wake",
		},
		{
			name:    "not found wins the reason when both happen, and both are named",
			edges:   []Edge{edge("shared/db", false, NotAllowed), edge("preview-42/gone", false, NotFound)},
			reason:  napwakev1alpha1.ReasonDependencyNotFound,
			message: "cannot wake shared/db (namespace shared does not list preview-42 in napwake.dev/dependents-from), preview-42/gone (no such ManagedWorkload); the others still wake",
		},
		{
			name:    "a refused learned edge keeps the condition True",
			edges:   []Edge{edge("preview-42/db", false, ""), edge("other/x", true, NotAllowed)},
			reason:  napwakev1alpha1.ReasonDependenciesResolved,
			message: "wakes preview-42/db",
		},
		{
			name:    "a dependency on itself is ignored and said so, and the condition stays True",
			edges:   []Edge{{From: api, To: api, Problem: Self}, edge("preview-42/db", false, "")},
			reason:  napwakev1alpha1.ReasonDependenciesResolved,
			message: "wakes preview-42/db; its dependency on itself is ignored",
		},
		{
			name:    "who keeps it awake ends the message",
			edges:   []Edge{edge("preview-42/gone", false, NotFound)},
			hold:    held,
			reason:  napwakev1alpha1.ReasonDependencyNotFound,
			message: "cannot wake preview-42/gone (no such ManagedWorkload); the others still wake; kept awake by preview-42/front",
		},
		{
			name:    "a held workload with no dependencies of its own",
			hold:    held,
			reason:  napwakev1alpha1.ReasonDependenciesResolved,
			message: "no dependencies; kept awake by preview-42/front",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := metav1.ConditionFalse
			if tc.reason == napwakev1alpha1.ReasonDependenciesResolved {
				status = metav1.ConditionTrue
			}
			c := Condition(tc.edges, tc.hold, 7, t0)
			eq(t, "condition", c, metav1.Condition{
				Type: napwakev1alpha1.ConditionDependencies, Status: status, Reason: tc.reason,
				Message: tc.message, ObservedGeneration: 7, LastTransitionTime: metav1.NewTime(t0),
			})
		})
	}
}

func TestConditionCountsPastTenNames(t *testing.T) {
	var edges []Edge
	for i := range 13 {
		edges = append(edges, Edge{From: key("p/api"), To: key("p/d" + strconv.Itoa(i))})
	}
	eq(t, "message", Condition(edges, Hold{}, 1, t0).Message,
		"wakes p/d0, p/d1, p/d2, p/d3, p/d4, p/d5, p/d6, p/d7, p/d8, p/d9 and 3 more")
}
