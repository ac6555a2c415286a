package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"napwake.dev/shared/testenv"
)

// allAlerts are the PrometheusRule's alerts with every value at its default
// (docs/metrics.md#alerts).
var allAlerts = []string{
	"NapwakeDoormanWakesFailing", "NapwakeDoormanUnavailable", "NapwakeOperatorDown",
	"NapwakeWorkloadStuck", "NapwakeWorkloadTurningCallersAway",
}

// rule is one alerting rule as rendered.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// alertRules returns the PrometheusRule's rules, every group's, by alert.
func alertRules(t *testing.T, objs objects) map[string]rule {
	t.Helper()
	var pr struct {
		Spec struct {
			Groups []struct {
				Rules []rule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	raw, err := json.Marshal(objs.get(t, "PrometheusRule", release).Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &pr); err != nil {
		t.Fatal(err)
	}
	out := map[string]rule{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r
		}
	}
	return out
}

// troubleshootingAnchors are the anchors GitHub gives the headings of
// docs/troubleshooting.md: lower case, spaces to hyphens, punctuation but
// hyphens and underscores dropped.
func troubleshootingAnchors(t *testing.T) []string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	var anchors []string
	fenced := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if h, ok := strings.CutPrefix(line, "#"); ok && !fenced {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			anchors = append(anchors, strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-"))
		}
	}
	return anchors
}

// TestEveryAlertLinksARunbookThatExists: each alert, old and new, has a
// severity, a summary and a runbook_url into docs/troubleshooting.md at a
// heading that is there, so whoever is paged lands on what to do.
func TestEveryAlertLinksARunbookThatExists(t *testing.T) {
	anchors := troubleshootingAnchors(t)
	rules := alertRules(t, render(t, "--set", "monitoring.prometheusRule.enabled=true"))
	var names []string
	for name, r := range rules {
		names = append(names, name)
		base, anchor, ok := strings.Cut(r.Annotations["runbook_url"], "#")
		if !ok || base != "https://github.com/napwake/napwake/blob/main/docs/troubleshooting.md" {
			t.Errorf("%s: runbook_url %q, want docs/troubleshooting.md#…", name, r.Annotations["runbook_url"])
		}
		if !slices.Contains(anchors, anchor) {
			t.Errorf("%s: runbook_url's anchor #%s is no heading of docs/troubleshooting.md (%q)", name, anchor, anchors)
		}
		if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.For == "" {
			t.Errorf("%s: severity %q summary %q for %q: want all three", name, r.Labels["severity"], r.Annotations["summary"], r.For)
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(allAlerts))
	if !slices.Equal(names, want) {
		t.Errorf("alerts %q, want %q", names, want)
	}
	rules = alertRules(t, render(t, "--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.prometheusRule.runbookBaseURL=https://docs.example.com/napwake/troubleshooting"))
	if got := rules["NapwakeOperatorDown"].Annotations["runbook_url"]; got != "https://docs.example.com/napwake/troubleshooting#napwakeoperatordown" {
		t.Errorf("runbook_url %q does not follow runbookBaseURL", got)
	}
}

// TestTheWorkloadAlertsNameTheWorkloadFromTheOperatorsSeries: the new
// alerts read the operator's series (its job, not every target's), and
// keep namespace and name so the alert says which environment; the
// operator-down alert watches the operator's metrics Service.
func TestTheWorkloadAlertsNameTheWorkloadFromTheOperatorsSeries(t *testing.T) {
	rules := alertRules(t, render(t, "--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.prometheusRule.turnedAwayThreshold=25"))
	for _, tc := range []struct {
		alert string
		want  []string
	}{
		{"NapwakeOperatorDown", []string{`absent(up{namespace="napwake-system", job="napwake-operator-metrics"} == 1)`}},
		{"NapwakeWorkloadStuck", []string{`max by (namespace, name, phase) (napwake_operator_workload_phase{job="napwake-operator-metrics", phase=~"Pausing|Resuming"}) == 1`}},
		{"NapwakeWorkloadTurningCallersAway", []string{`max by (namespace, name) (increase(napwake_operator_workload_turned_away_requests_total{job="napwake-operator-metrics"}[15m])) > 25`}},
	} {
		got := rules[tc.alert].Expr
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s expr %q, want %q", tc.alert, got, w)
			}
		}
		for _, n := range metricName.FindAllString(got, -1) {
			if !slices.Contains(napwakeMetrics, n) {
				t.Errorf("%s reads %s, which no component exports", tc.alert, n)
			}
		}
	}
	// Alertmanager's templates reach the rule as written, not as Helm
	// would have expanded them.
	if s := rules["NapwakeWorkloadStuck"].Annotations["summary"]; !strings.Contains(s, "{{ $labels.namespace }}/{{ $labels.name }}") {
		t.Errorf("NapwakeWorkloadStuck summary %q does not name the workload", s)
	}
}

// TestPerWorkloadMetricsOffTurnsOffTheirFlagAndAlerts: the value reaches the
// operator's flag, and the alerts that would never fire without those
// series are left out.
func TestPerWorkloadMetricsOffTurnsOffTheirFlagAndAlerts(t *testing.T) {
	for _, tc := range []struct {
		value string
		flag  string
		n     int
	}{
		{"true", "--per-workload-metrics=true", len(allAlerts)},
		{"false", "--per-workload-metrics=false", len(allAlerts) - 2},
	} {
		objs := render(t, "--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.perWorkloadMetrics="+tc.value)
		if args := container(t, objs.deployment(t, release+"-operator")).Args; !slices.Contains(args, tc.flag) {
			t.Errorf("perWorkloadMetrics=%s: operator args %q lack %s", tc.value, args, tc.flag)
		}
		rules := alertRules(t, objs)
		if len(rules) != tc.n {
			t.Errorf("perWorkloadMetrics=%s: %d alerts, want %d", tc.value, len(rules), tc.n)
		}
		if _, ok := rules["NapwakeWorkloadStuck"]; ok != (tc.value == "true") {
			t.Errorf("perWorkloadMetrics=%s: NapwakeWorkloadStuck rendered %v", tc.value, ok)
		}
	}
}
