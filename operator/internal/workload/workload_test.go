package workload

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var rollout = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []schema.GroupVersionKind
		wantErr string
	}{
		{"", nil, ""},
		{"argoproj.io/v1alpha1/Rollout", []schema.GroupVersionKind{rollout}, ""},
		{" argoproj.io/v1alpha1/Rollout , argoproj.io/v1alpha1/Rollout,", []schema.GroupVersionKind{rollout}, ""},
		{"v1/ReplicationController", []schema.GroupVersionKind{{Version: "v1", Kind: "ReplicationController"}}, ""},
		{"Rollout", nil, "want group/version/Kind"},
		{"argoproj.io/v1alpha1/", nil, "want group/version/Kind"},
		{"argoproj.io/v1alpha1/rollout", nil, "want group/version/Kind"},
		{"a/b/c/Rollout", nil, "want group/version/Kind"},
		{"apps/v1/Deployment", nil, "always paused"},
	} {
		got, err := ParseKinds(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), FlagTargetKinds) {
				t.Errorf("ParseKinds(%q) error %v, want one naming %s and saying %q", tc.in, err, FlagTargetKinds, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestEachRefusalNamesItsCauseAndTheWayOut: each message of a kind Napwake
// cannot pause says why, and where there is one, what to do.
func TestEachRefusalNamesItsCauseAndTheWayOut(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		want      []string
	}{
		{"not given", NotGiven(rollout), []string{"Rollout.argoproj.io", "argoproj.io/v1alpha1/Rollout", "--target-kinds", "operator.targetKinds"}},
		{"not served", NotServed(rollout), []string{"serves no kind Rollout in argoproj.io/v1alpha1", "CRD"}},
		{"forbidden", Forbidden(rollout, "read the scale subresource"), []string{"may not read the scale subresource", "Rollout.argoproj.io", "operator.targetKinds"}},
		{"no scale", NoScale(rollout), []string{"Rollout.argoproj.io has no scale subresource"}},
		{"empty selector", NoSelector(rollout, "", nil), []string{"empty status.selector", "labelSelectorPath"}},
		{"bad selector", NoSelector(rollout, "a in (", errors.New("unexpected EOF")), []string{`"a in ("`, "cannot be read", "unexpected EOF"}},
		{"core kind", NotGiven(schema.GroupVersionKind{Version: "v1", Kind: "ReplicationController"}), []string{"ReplicationController is not", "v1/ReplicationController"}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.msg, w) {
				t.Errorf("%s: %q does not say %q", tc.name, tc.msg, w)
			}
		}
	}
}

func TestParseSelector(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want as metav1.FormatLabelSelector writes it
		ok       bool
	}{
		{"app=web", "app=web", true},
		{"app=web,tier in (a,b)", "app=web,tier in (a,b)", true},
		{"", "", false},
		{"  ", "", false},
		{"app in (", "", false},
	} {
		got, err := ParseSelector(tc.in)
		if (err == nil) != tc.ok || (tc.ok && metav1.FormatLabelSelector(got) != tc.want) {
			t.Errorf("ParseSelector(%q) = %+v, %v; want %s, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestTemplateOfReadsSpecTemplateElseTheSelectorsLabels(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front"}},
		{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}, // no one label: left out
	}}
	withTemplate := map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web", "v": "2"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "x"}}},
	}}}
	tmpl, note := TemplateOf(withTemplate, sel)
	if note != "" || tmpl.Labels["v"] != "2" || len(tmpl.Spec.Containers) != 1 {
		t.Errorf("with spec.template: %+v, note %q; want it read, no note", tmpl, note)
	}
	tmpl, note = TemplateOf(map[string]any{"spec": map[string]any{"replicas": int64(1)}}, sel)
	want := map[string]string{"app": "web", "tier": "front"}
	if note != NoTemplate || !reflect.DeepEqual(tmpl.Labels, want) || tmpl.Annotations[AnnotationTemplateFromSelector] != "true" {
		t.Errorf("without: labels %v annotations %v note %q; want %v, marked, NoTemplate", tmpl.Labels, tmpl.Annotations, note, want)
	}
}
