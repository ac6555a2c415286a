package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsAreNamedAsDesigned holds the names and labels design.md
// section 11 and the chart's dashboard and alerts read.
func TestMetricsAreNamedAsDesigned(t *testing.T) {
	m := New()
	for _, tc := range []struct {
		c    prometheus.Collector
		want string
	}{
		{m.Pauses, `fqName: "napwake_operator_pauses_total"`},
		{m.Pauses, `variableLabels: {reason}`},
		{m.Wakes, `variableLabels: {source}`},
		{m.Wakes, `fqName: "napwake_operator_wakes_total"`},
		{m.ResumeSeconds, `fqName: "napwake_operator_resume_duration_seconds"`},
		{m.RouteMoves, `fqName: "napwake_operator_route_moves_total"`},
		{m.RouteMoves, `variableLabels: {result}`},
		{m.RouteMoveSeconds, `fqName: "napwake_operator_route_move_seconds"`},
	} {
		ch := make(chan *prometheus.Desc, 4)
		tc.c.Describe(ch)
		close(ch)
		d := <-ch
		if d == nil || !strings.Contains(d.String(), tc.want) {
			t.Errorf("metric %v, want %s", d, tc.want)
		}
	}
}
