package settings

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// A dependency on the workload itself is read like any other: only the
// graph knows the ManagedWorkload's name and namespace, and it reports the
// self-dependency on the Dependencies condition (operator/internal/deps).
func TestADependencyOnItselfIsReadForTheConditionToReport(t *testing.T) {
	s, warnings := Spec(napwakev1alpha1.KindDeployment, "api", map[string]string{napwakev1alpha1.AnnotationDependsOn: "api, db"}, nil, defaults)
	eq(t, s.Dependencies, []napwakev1alpha1.DependencyRef{{Name: "api"}, {Name: "db"}})
	eq(t, len(warnings), 0)
}

// FuzzDependsOn feeds arbitrary napwake.dev/depends-on values, on the
// workload and on its namespace. What must never happen: a panic; a
// dependency whose name or namespace is not a DNS label (an empty
// namespace is this one); the same dependency twice; more than
// maxDependents; a dependency no item of either value names; the
// namespace's list applying over a workload's value with no items (that
// says "none": a dependency can opt out of its namespace's list); a value
// with a non-empty item that gives nothing and raises no warning.
func FuzzDependsOn(f *testing.F) {
	f.Add("postgres, cache,shared/redis,postgres", "")
	f.Add(" , ,,", "db")
	f.Add("a/b/c,/x,y/,Cache_1", "ns/db")
	f.Add(strings.Repeat("a,", 70), "")
	f.Add("api", "api")
	f.Add("é,\x00, \t db\n", "")
	f.Fuzz(func(t *testing.T, workload, namespace string) {
		s, warnings := Spec(napwakev1alpha1.KindDeployment, "api",
			map[string]string{napwakev1alpha1.AnnotationDependsOn: workload},
			map[string]string{napwakev1alpha1.AnnotationDependsOn: namespace}, defaults)
		if len(s.Dependencies) > maxDependents {
			t.Fatalf("%d dependencies", len(s.Dependencies))
		}
		seen := map[napwakev1alpha1.DependencyRef]bool{}
		for _, d := range s.Dependencies {
			if len(validation.IsDNS1123Label(d.Name)) > 0 || (d.Namespace != "" && len(validation.IsDNS1123Label(d.Namespace)) > 0) {
				t.Fatalf("dependency %#v is not DNS labels", d)
			}
			if seen[d] {
				t.Fatalf("dependency %#v twice", d)
			}
			seen[d] = true
			if !names(workload, d) && !names(namespace, d) {
				t.Fatalf("dependency %#v from neither %q nor %q", d, workload, namespace)
			}
		}
		if !hasItem(workload) && len(s.Dependencies) > 0 {
			t.Fatalf("the workload's %q says none, yet %v", workload, s.Dependencies)
		}
		if len(s.Dependencies) == 0 && hasItem(workload) && len(warnings) == 0 {
			t.Fatalf("%q gave nothing and no warning", workload)
		}
	})
}

// names reports whether an item of v, trimmed, is d.
func names(v string, d napwakev1alpha1.DependencyRef) bool {
	want := d.Name
	if d.Namespace != "" {
		want = d.Namespace + "/" + d.Name
	}
	for _, item := range strings.Split(v, ",") {
		if strings.TrimSpace(item) == want {
			return true
		}
	}
	return false
}

func hasItem(v string) bool {
	for _, item := range strings.Split(v, ",") {
		if strings.TrimSpace(item) != "" {
			return true
		}
	}
	return false
}
