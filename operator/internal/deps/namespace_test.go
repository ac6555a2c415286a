package deps

import (
	"strings"
	"testing"
)

func TestParseDependentsFrom(t *testing.T) {
	for _, tc := range []struct {
		name     string
		value    string
		allows   []string
		refuses  []string
		str      string
		problems int
	}{
		{name: "no value allows no other namespace", refuses: []string{"p", ""}, str: ""},
		{name: "a list allows exactly its namespaces", value: "preview-42,preview-43", allows: []string{"preview-42", "preview-43"}, refuses: []string{"preview-4", "shared"}, str: "preview-42,preview-43"},
		{name: "spaces, empty items and repeats are ignored", value: " b , ,a,,b ", allows: []string{"a", "b"}, refuses: []string{" a", ""}, str: "a,b"},
		{name: "* allows every namespace", value: "*", allows: []string{"p", "anything"}, str: "*"},
		{name: "* anywhere in the list allows every namespace", value: "a, *", allows: []string{"z"}, str: "*"},
		{name: "an item that is not a namespace name is reported and the others apply", value: "a,Preview_1,b/c", allows: []string{"a"}, refuses: []string{"Preview_1", "b/c", "b"}, str: "a", problems: 2},
		{name: "a glob is not a namespace name", value: "preview-*", refuses: []string{"preview-1"}, problems: 1},
		{name: "many bad items are reported as eight and a count", value: strings.Repeat("X,", 20), problems: maxProblems + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, problems := ParseDependentsFrom(tc.value)
			for _, ns := range tc.allows {
				eq(t, "allows "+ns, a.Allows(ns), true)
			}
			for _, ns := range tc.refuses {
				eq(t, "allows "+ns, a.Allows(ns), false)
			}
			eq(t, "string", a.String(), tc.str)
			eq(t, "problems", len(problems), tc.problems)
		})
	}
}

func TestAProblemQuotesAtMost64BytesOfTheItem(t *testing.T) {
	_, problems := ParseDependentsFrom(strings.Repeat("é", 100))
	if len(problems) != 1 || !strings.HasPrefix(problems[0], `"`+strings.Repeat("é", 31)+"… is not") {
		t.Fatalf("problems %q", problems)
	}
}
