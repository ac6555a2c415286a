package cli

import (
	"testing"
)

// TestFlagMistakesAreRefusedBeforeTheClusterIsContacted points the plugin at
// an address nothing listens on: every mistake in a flag must come back as
// its own one-line usage error (exit code 2), not "cannot reach", which
// proves the check ran before any request.
func TestFlagMistakesAreRefusedBeforeTheClusterIsContacted(t *testing.T) {
	nowhere := kubeconfigFor(t, "https://"+closedPort(t))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a zero --timeout", []string{"wake", "api", "--timeout", "0s"}, "--timeout must be more than 0s, got 0s"},
		{"a negative --timeout", []string{"pause", "api", "--timeout", "-1m"}, "--timeout must be more than 0s, got -1m0s"},
		{"a --timeout that is no duration", []string{"wake", "api", "--timeout", "soon"}, `invalid argument "soon" for "--timeout" flag`},
		{"restore's zero --timeout", []string{"restore", "--timeout", "0s"}, "--timeout must be more than 0s, got 0s"},
		{"a --request-timeout that is no duration", []string{"status", "--request-timeout", "soon"}, `--request-timeout "soon" is not a duration such as 30s or 2m (0: no limit)`},
		{"a negative --request-timeout", []string{"describe", "api", "--request-timeout", "-5"}, `--request-timeout "-5" is not a duration`},
		{"an --until that is no time", []string{"wake", "api", "--until", "teatime"}, `--until "teatime" is neither a duration ("2h", "90m"), a time of day ("18:00") nor an RFC 3339 time`},
		{"an --until hour past 23", []string{"pause", "api", "--until", "25:00"}, `--until "25:00" is not a time of day from 00:00 to 23:59`},
		{"an --until in the past", []string{"pause", "api", "--until", "-2h"}, `--until "-2h" is not in the future`},
		{"an --until over a month ahead", []string{"wake", "api", "--until", "2000h"}, `--until "2000h" is more than 31 days ahead`},
		{"an --until that is no RFC 3339 time", []string{"wake", "api", "--until", "2026-13-01T00:00:00Z"}, `--until "2026-13-01T00:00:00Z" is not an RFC 3339 time`},
		{"status -o xml", []string{"status", "-o", "xml"}, `-o/--output "xml" is not a format this command prints: use one of wide, json,`},
		{"describe -o wide", []string{"describe", "api", "-o", "wide"}, `-o/--output "wide" is not a format this command prints: use one of json,`},
		{"a broken jsonpath", []string{"status", "-o", "jsonpath={.items["}, "-o/--output jsonpath={.items[: "},
		{"savings -o yaml", []string{"savings", "-o", "yaml"}, `--output "yaml" is not supported: use json, or leave it out for a table`},
		{"forecast -o yaml", []string{"forecast", "api", "-o", "yaml"}, `--output "yaml" is not supported: use json, or leave it out for the grid`},
		{"version -o xml", []string{"version", "-o", "xml"}, `unknown output format "xml" for version: use -o json or -o yaml`},
		{"-A with a NAME", []string{"wake", "api", "-A"}, "-A/--all-namespaces does not go with a NAME: pass -n NAMESPACE, or -l SELECTOR with -A"},
		{"describe -A with a NAME", []string{"describe", "-A", "api", "web"}, "-A/--all-namespaces does not go with a NAME"},
		{"forecast -A", []string{"forecast", "-A", "api"}, "-A/--all-namespaces does not go with a NAME: pass -n NAMESPACE"},
		{"names and -l", []string{"pause", "api", "-l", "team=web"}, "kubectl napwake pause takes names or -l/--selector, not both"},
		{"no name", []string{"describe"}, "kubectl napwake describe needs a ManagedWorkload name, several, or -l SELECTOR, e.g. kubectl napwake describe api -n preview-42"},
		{"a name for status", []string{"status", "api"}, `kubectl napwake status takes no NAME (got "api"): use -l SELECTOR to pick workloads, or describe NAME`},
		{"two names for forecast", []string{"forecast", "api", "web"}, "kubectl napwake forecast needs exactly one ManagedWorkload name"},
		{"another kind", []string{"wake", "deployment/api"}, `"deployment/api": only ManagedWorkloads can be named here (managedworkload/NAME, mw/NAME or NAME), not deployment`},
		{"another kind for forecast", []string{"forecast", "svc/api"}, `"svc/api": only ManagedWorkloads can be named here`},
		{"an empty name after the kind", []string{"wake", "mw/"}, `"mw/" is not a ManagedWorkload name: `},
		{"a name no object can have", []string{"describe", "API_1"}, `"API_1" is not a ManagedWorkload name: `},
		{"a broken selector", []string{"wake", "-l", "team in (web"}, `-l/--selector "team in (web": `},
		{"status with a broken selector", []string{"status", "-l", "=x"}, `-l/--selector "=x": `},
		{"an unknown flag", []string{"wake", "api", "--colour"}, "unknown flag: --colour: see kubectl napwake wake --help"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nowhere, nil, tc.args...)
			assertOneLine(t, r, tc.want)
			if code := ExitCode(r.err); code != ExitUsage {
				t.Errorf("exit code %d, want %d (a usage error)", code, ExitUsage)
			}
		})
	}
}

// TestExitCodes: 2 for what the command line got wrong (cobra's unknown
// command included), 1 for what the cluster said, 0 for success.
func TestExitCodes(t *testing.T) {
	nowhere := kubeconfigFor(t, "https://"+closedPort(t))
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"frobnicate"}, ExitUsage},
		{[]string{"savings", "extra"}, ExitUsage},
		{[]string{"wake", "api", "--until", "nope"}, ExitUsage},
		{[]string{"status"}, ExitFailed}, // cannot reach the cluster
		{[]string{"version"}, ExitOK},    // answers without the cluster
	} {
		if got := ExitCode(run(t, nowhere, nil, tc.args...).err); got != tc.code {
			t.Errorf("%v: exit code %d, want %d", tc.args, got, tc.code)
		}
	}
}

// TestSeveralNamesStopWhenTheClusterIsDown: an unreachable cluster fails
// the first name; the rest are not tried (each would wait as long), and the
// one error says why.
func TestSeveralNamesStopWhenTheClusterIsDown(t *testing.T) {
	addr := closedPort(t)
	r := run(t, kubeconfigFor(t, "https://"+addr), nil, "pause", "api", "web", "db")
	assertOneLine(t, r, "cannot reach the Kubernetes API server at https://"+addr+" (connection refused)")
	if code := ExitCode(r.err); code != ExitFailed {
		t.Errorf("exit code %d, want %d", code, ExitFailed)
	}
}
