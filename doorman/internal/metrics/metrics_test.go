package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetricsAreNamedAndLabelledAsDesigned(t *testing.T) {
	m := New()
	m.Wakes.WithLabelValues(ResultWoken).Inc()
	m.Rejections.WithLabelValues("held").Inc()
	m.Wait.Observe(1.5)
	m.Held.Set(3)
	m.Passing.Set(2)
	want := `
# HELP napwake_doorman_wakes_total Connections to paused workloads by outcome: woken, passed, turned_away, timed_out, failed.
# TYPE napwake_doorman_wakes_total counter
napwake_doorman_wakes_total{result="failed"} 0
napwake_doorman_wakes_total{result="passed"} 0
napwake_doorman_wakes_total{result="timed_out"} 0
napwake_doorman_wakes_total{result="turned_away"} 0
napwake_doorman_wakes_total{result="woken"} 1
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "napwake_doorman_wakes_total"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"napwake_doorman_held_connections", "napwake_doorman_passing_connections"} {
		if n, err := testutil.GatherAndCount(m.Registry, name); err != nil || n != 1 {
			t.Fatalf("%s: %d series, %v", name, n, err)
		}
	}
	if got := testutil.ToFloat64(m.Held); got != 3 {
		t.Fatalf("held %v", got)
	}
	if n, _ := testutil.GatherAndCount(m.Registry, "napwake_doorman_wait_seconds", "napwake_doorman_rejections_total"); n != 2 {
		t.Fatalf("wait histogram and rejections: %d series, want 2", n)
	}
}

func TestTableEntriesReportEveryNamedTableAtScrapeTime(t *testing.T) {
	m := New()
	sizes := map[string]int{"listeners": 2}
	m.ObserveTables([]string{"listeners", "connections"}, func() map[string]int { return sizes })
	sizes = map[string]int{"listeners": 3, "connections": 7}
	want := `
# HELP napwake_doorman_table_entries Entries in each of the doorman's in-memory tables (listeners, connections, routed keys, wake memos, limiters), by table.
# TYPE napwake_doorman_table_entries gauge
napwake_doorman_table_entries{table="connections"} 7
napwake_doorman_table_entries{table="listeners"} 3
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "napwake_doorman_table_entries"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(m.Registry, "napwake_doorman_table_entries"); err != nil || len(problems) != 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
}

// TestEveryMetricPassesPromlint runs Prometheus' own linter over the whole
// registry (napwake_build_info, the Go and process collectors included).
func TestEveryMetricPassesPromlint(t *testing.T) {
	m := New()
	m.ObserveTables([]string{"listeners"}, func() map[string]int { return map[string]int{"listeners": 1} })
	m.Wakes.WithLabelValues(ResultWoken).Inc()
	m.Wait.Observe(1)
	m.Rejections.WithLabelValues("held").Inc()
	problems, err := testutil.GatherAndLint(m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if n, err := testutil.GatherAndCount(m.Registry, "napwake_build_info"); err != nil || n != 1 {
		t.Errorf("napwake_build_info: %d series, %v; want 1", n, err)
	}
}
