package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestRequestsOfSumsTheContainersOfAnyKindsPodTemplate(t *testing.T) {
	container := func(cpu, memory string) any {
		req := map[string]any{}
		if cpu != "" {
			req["cpu"] = cpu
		}
		if memory != "" {
			req["memory"] = memory
		}
		return map[string]any{"name": "c", "image": "i", "resources": map[string]any{"requests": req}}
	}
	withTemplate := func(containers ...any) map[string]any {
		return map[string]any{"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{"containers": containers}}}}
	}
	for _, tc := range []struct {
		name        string
		obj         map[string]any
		cpu, memory string
		known       bool
		noTemplate  bool
	}{
		{"a Deployment's or a Rollout's template, every container", withTemplate(container("200m", "512Mi"), container("50m", "")), "250m", "512Mi", true, false},
		{"a template without requests", withTemplate(container("", "")), "0", "0", true, false},
		{"no spec.template (a kind that has none)", map[string]any{"spec": map[string]any{"replicas": int64(2)}}, "0", "0", false, true},
		{"a spec.template that is not a pod template", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": "x"}}}, "0", "0", false, false},
		{"a spec that is not an object", map[string]any{"spec": "x"}, "0", "0", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RequestsOf(tc.obj)
			if got.Known != tc.known || got.NoTemplate != tc.noTemplate || got.CPU.String() != tc.cpu || got.Memory.String() != tc.memory {
				t.Fatalf("RequestsOf = %+v (cpu %s memory %s), want known %v noTemplate %v cpu %s memory %s",
					got, got.CPU.String(), got.Memory.String(), tc.known, tc.noTemplate, tc.cpu, tc.memory)
			}
		})
	}
}

func TestSavingsSaysWhichWorkloadsRequestsAreLeftOutAndWhy(t *testing.T) {
	saved := func(name string) napwakev1alpha1.ManagedWorkload {
		return napwakev1alpha1.ManagedWorkload{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Status:     napwakev1alpha1.ManagedWorkloadStatus{Savings: &napwakev1alpha1.SavingsStatus{PausedReplicaSeconds: 3600, Pauses: 1}},
		}
	}
	mws := []napwakev1alpha1.ManagedWorkload{saved("gone"), saved("bare"), saved("never")}
	mws[2].Status.Savings = nil
	rows := SavingsOf(mws, map[string]Requests{"ns/bare": {NoTemplate: true}, "ns/never": {NoTemplate: true}}, now)
	if len(rows) != 1 || rows[0].Unknown != 1 || rows[0].NoTemplate != 1 {
		t.Fatalf("rows %+v, want one workload unknown and one without a template (the one never paused not counted)", rows)
	}
	var out bytes.Buffer
	Savings(&out, rows, Options{Now: now.Add(time.Hour)})
	for _, want := range []string{
		"CPU and memory leave out 1 workload whose target could not be read.",
		"CPU and memory leave out 1 workload whose target has no pod template (spec.template) to read requests from.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("savings lacks %q:\n%s", want, out.String())
		}
	}
}
