package cli

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// kubectlSpellings are the ways kubectl spells ManagedWorkloads' kind, as
// `kubectl api-resources` lists them: written out here, not taken from the
// code under test.
var kubectlSpellings = []string{"managedworkload", "managedworkloads", "mw", "managedworkload.napwake.dev", "managedworkloads.napwake.dev"}

// FuzzParseName: an argument is either refused as a usage error in one
// line, or read as a name the API server could hold; it must never panic,
// and never let through another kind.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"api", "mw/api", "managedworkload/api", "MW/api", "deployment/api", "mw/", "/api", "a/b/c", "API", "", "mw/mw/api"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		name, err := parseName(arg)
		if err != nil {
			if ExitCode(err) != ExitUsage || strings.Contains(err.Error(), "\n") {
				t.Fatalf("parseName(%q) = %q, want a one-line usage error", arg, err)
			}
			return
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("parseName(%q) = %q, not a name: %v", arg, name, errs)
		}
		if kind, _, ok := strings.Cut(arg, "/"); ok && !slices.Contains(kubectlSpellings, strings.ToLower(kind)) {
			t.Fatalf("parseName(%q) let kind %q through", arg, kind)
		}
	})
}
