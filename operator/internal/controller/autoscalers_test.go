package controller

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestAutoscalerChangeNamesTheReplicaBoundsThatChanged(t *testing.T) {
	b := func(minimum, maximum *int64) replicaBounds { return replicaBounds{Min: minimum, Max: maximum} }
	one, three, five, ten := ptr.To[int64](1), ptr.To[int64](3), ptr.To[int64](5), ptr.To[int64](10)
	for _, tc := range []struct {
		name     string
		old, cur replicaBounds
		want     string
	}{
		{"the minimum raised", b(one, five), b(three, five), "minReplicas 1 → 3"},
		{"both bounds", b(one, five), b(three, ten), "minReplicas 1 → 3, maxReplicas 5 → 10"},
		{"the minimum unset", b(one, five), b(nil, five), "minReplicas 1 → unset"},
		{"the minimum set", b(nil, five), b(one, five), "minReplicas unset → 1"},
		{"neither (metrics, behaviour)", b(one, five), b(one, five), "its spec changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := autoscalerChange("minReplicas", "maxReplicas", tc.old, tc.cur); got != tc.want {
				t.Fatalf("autoscalerChange = %q, want %q", got, tc.want)
			}
		})
	}
}
