package chart

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// napwakeMetrics are the metric names the components export
// (docs/design/components.md#metrics; each component's own test asserts it
// exports them).
var napwakeMetrics = []string{
	"napwake_operator_workloads", "napwake_operator_pauses_total", "napwake_operator_wakes_total",
	"napwake_operator_resume_duration_seconds_bucket", "napwake_operator_paused_replica_seconds_total",
	"napwake_operator_route_moves_total", "napwake_operator_route_move_seconds_bucket",
	"napwake_operator_wake_step_seconds_bucket", "napwake_operator_wake_step_seconds_sum", "napwake_operator_wake_step_seconds_count",
	"napwake_doorman_wakes_total", "napwake_doorman_wait_seconds_bucket", "napwake_doorman_held_connections",
	"napwake_doorman_passing_connections", "napwake_doorman_rejections_total",
	"napwake_operator_workload_phase", "napwake_operator_workload_last_wake_duration_seconds",
	"napwake_operator_workload_cold_starts_total", "napwake_operator_workload_turned_away_requests_total",
	"napwake_operator_workload_paused_replica_seconds_total", "napwake_build_info",
}

var metricName = regexp.MustCompile(`napwake_[a-z_]+`)

// TestTheGrafanaDashboardIsValidAndReadsOnlyRealMetrics renders the
// dashboard's ConfigMap and checks what Grafana's sidecar and Grafana need:
// the sidecar's label, JSON that decodes, a unique uid, the panels the
// issue names, and queries over metrics Napwake really exports.
func TestTheGrafanaDashboardIsValidAndReadsOnlyRealMetrics(t *testing.T) {
	if got := render(t).ofKind("ConfigMap"); len(got) != 0 {
		t.Fatalf("a dashboard rendered by default: %s", got)
	}
	objs := render(t, "--set", "monitoring.grafanaDashboard.enabled=true", "--set", "monitoring.grafanaDashboard.namespace=monitoring")
	var cm corev1.ConfigMap
	into(t, objs.get(t, "ConfigMap", release+"-dashboard"), &cm)
	if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != "monitoring" {
		t.Errorf("ConfigMap labels %v in %q, want grafana_dashboard: \"1\" in monitoring", cm.Labels, cm.Namespace)
	}
	var d struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query string `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID      int    `json:"id"`
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(cm.Data["napwake.json"]), &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q title %q: Grafana needs both", d.UID, d.Title)
	}
	var titles []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: %q reads no Napwake metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				if !slices.Contains(napwakeMetrics, n) {
					t.Errorf("panel %q reads %s, which no component exports", p.Title, n)
				}
				// The per-workload series' namespace is the workload's,
				// not Napwake's: they follow the environment's variables.
				if strings.HasPrefix(n, "napwake_operator_workload_") && !strings.Contains(tg.Expr, `namespace=~"$workload_namespace", name=~"$workload"`) {
					t.Errorf("panel %q: %q does not follow the environment variables", p.Title, tg.Expr)
				}
			}
		}
	}
	for _, want := range []string{"Workloads by phase", "Doorman wakes by result", "Doorman wait (held → passed on)", "Resume duration (wake → first Ready pod)", "Replica-hours saved",
		"Wake step duration p90, by step", "Mean time per wake, by step (24h)",
		"Phase by workload", "Last wake duration by workload", "Cold starts seen by people, per hour", "Requests turned away, per 15 minutes", "Replica-hours saved by workload"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no %q panel among %q", want, titles)
		}
	}
	// The per-environment view: pick a namespace, then a ManagedWorkload in it.
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Query
	}
	if q := vars["workload_namespace"]; q != "label_values(napwake_operator_workload_phase, namespace)" {
		t.Errorf("variable workload_namespace %q, want the per-workload series' namespaces", q)
	}
	if q := vars["workload"]; q != `label_values(napwake_operator_workload_phase{namespace=~"$workload_namespace"}, name)` {
		t.Errorf("variable workload %q, want the names in the chosen namespaces", q)
	}
}
