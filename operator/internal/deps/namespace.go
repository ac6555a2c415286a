package deps

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Allow says which other namespaces' workloads may depend on a namespace's
// workloads: the parsed napwake.dev/dependents-from. The zero Allow allows
// none. A namespace always allows itself; Allows is only asked about others.
type Allow struct {
	any   bool
	names map[string]struct{}
}

// AllowAny allows every namespace, as "*" does.
func AllowAny() Allow { return Allow{any: true} }

// AllowNamespaces allows exactly the given namespaces.
func AllowNamespaces(names ...string) Allow {
	a := Allow{names: make(map[string]struct{}, len(names))}
	for _, n := range names {
		a.names[n] = struct{}{}
	}
	return a
}

// Allows reports whether workloads in namespace ns may depend on this
// namespace's.
func (a Allow) Allows(ns string) bool {
	if a.any {
		return true
	}
	_, ok := a.names[ns]
	return ok
}

// String renders the value as the annotation would say it, names sorted.
func (a Allow) String() string {
	if a.any {
		return napwakev1alpha1.DependentsFromAny
	}
	names := make([]string, 0, len(a.names))
	for n := range a.names {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func (a Allow) equal(b Allow) bool {
	if a.any || b.any {
		return a.any == b.any
	}
	if len(a.names) != len(b.names) {
		return false
	}
	for n := range a.names {
		if _, ok := b.names[n]; !ok {
			return false
		}
	}
	return true
}

// ParseDependentsFrom reads a Namespace's napwake.dev/dependents-from:
// namespace names separated by commas, or "*" for all. Spaces around items
// and empty items are ignored, as are repeats. "*" anywhere in the list
// allows all. An item that is not a DNS label can name no namespace, so it
// allows nothing: it is skipped and comes back as a problem (for an
// InvalidSetting event); the valid items still apply. An absent or empty
// value allows no other namespace.
func ParseDependentsFrom(v string) (Allow, []string) {
	var problems []string
	a := Allow{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		switch item {
		case "":
			continue
		case napwakev1alpha1.DependentsFromAny:
			a.any = true
			continue
		}
		if len(validation.IsDNS1123Label(item)) > 0 {
			problems = append(problems, fmt.Sprintf("%s is not a namespace name (lower-case letters, digits and '-', at most 63); ignored", clip(strconv.Quote(item))))
			continue
		}
		if a.names == nil {
			a.names = map[string]struct{}{}
		}
		a.names[item] = struct{}{}
	}
	if a.any {
		a.names = nil
	}
	if len(problems) > maxProblems {
		problems = append(problems[:maxProblems], fmt.Sprintf("and %d more items that are not namespace names; ignored", len(problems)-maxProblems))
	}
	return a, problems
}

// maxProblems bounds what one annotation can put in events: 8 items say
// what is wrong as well as 800 would.
const maxProblems = 8

// clip shortens s for a message: 64 bytes, a quoted DNS label's length.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
