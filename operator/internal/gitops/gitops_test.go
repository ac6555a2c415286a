package gitops

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func entry(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, Subresource: subresource,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

const (
	withReplicas    = `{"f:spec":{"f:replicas":{},"f:template":{}}}`
	withoutReplicas = `{"f:spec":{"f:template":{}},"f:metadata":{"f:labels":{}}}`
)

func TestReplicasOwner(t *testing.T) {
	tests := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		{"nobody's managedFields own nothing", nil, ""},
		{"Argo CD applying replicas owns them", []metav1.ManagedFieldsEntry{entry("argocd-controller", "", withReplicas)}, "argocd-controller"},
		{"Argo CD's application controller owns them too", []metav1.ManagedFieldsEntry{entry("argocd-application-controller", "", withReplicas)}, "argocd-application-controller"},
		{"Flux's kustomize-controller owns them", []metav1.ManagedFieldsEntry{entry("kubectl", "", withoutReplicas), entry("kustomize-controller", "", withReplicas)}, "kustomize-controller"},
		{"Flux's helm-controller owns them", []metav1.ManagedFieldsEntry{entry("helm-controller", "", withReplicas)}, "helm-controller"},
		{"a GitOps manifest without replicas owns nothing", []metav1.ManagedFieldsEntry{entry("argocd-controller", "", withoutReplicas)}, ""},
		{"kubectl owning replicas is not GitOps", []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", "", withReplicas)}, ""},
		{"a scale through the subresource is not the manifest", []metav1.ManagedFieldsEntry{entry("argocd-controller", "scale", withReplicas)}, ""},
		{"unreadable fieldsV1 is no evidence", []metav1.ManagedFieldsEntry{entry("argocd-controller", "", `{"f:spec":`)}, ""},
		{"fieldsV1 of the wrong shape is no evidence", []metav1.ManagedFieldsEntry{entry("argocd-controller", "", `{"f:spec":["f:replicas"]}`)}, ""},
		{"an entry without fieldsV1 is no evidence", []metav1.ManagedFieldsEntry{{Manager: "argocd-controller"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, ok := ReplicasOwner(tt.entries)
			if got := tool.Manager; got != tt.want || ok != (tt.want != "") {
				t.Errorf("ReplicasOwner = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	argo := Tools[0]
	flagged := &metav1.Condition{Type: napwakev1alpha1.ConditionGitOps, Status: metav1.ConditionFalse,
		Reason: napwakev1alpha1.ReasonReplicasManagedByGitOps, Message: "Argo CD owns it"}
	tests := []struct {
		name       string
		owned      bool
		phase      napwakev1alpha1.Phase
		prev       *metav1.Condition
		wantStatus metav1.ConditionStatus
		wantIn     string
	}{
		{"an owned workload is False, with the fix", true, napwakev1alpha1.PhaseRunning, nil, metav1.ConditionFalse, "RespectIgnoreDifferences=true"},
		{"an unowned running workload is True", false, napwakev1alpha1.PhaseRunning, nil, metav1.ConditionTrue, "no GitOps controller"},
		{"a finding stands while paused (Napwake's scale owns replicas then)", false, napwakev1alpha1.PhasePaused, flagged, metav1.ConditionFalse, "Argo CD owns it"},
		{"a finding stands while pausing", false, napwakev1alpha1.PhasePausing, flagged, metav1.ConditionFalse, "Argo CD owns it"},
		{"a finding is cleared once running without it", false, napwakev1alpha1.PhaseRunning, flagged, metav1.ConditionTrue, "no GitOps controller"},
		{"a paused workload never flagged is True", false, napwakev1alpha1.PhasePaused, nil, metav1.ConditionTrue, "no GitOps controller"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Judge(argo, tt.owned, tt.phase, tt.prev)
			if c.Status != tt.wantStatus || !strings.Contains(c.Message, tt.wantIn) {
				t.Errorf("Judge = %+v, want %s with %q", c, tt.wantStatus, tt.wantIn)
			}
		})
	}
}

// FuzzReplicasOwner: any fieldsV1 bytes, from any client, must never panic
// and never make a manager outside Tools, or fields that do not name
// replicas (in plain text or JSON escapes), an owner.
func FuzzReplicasOwner(f *testing.F) {
	for _, s := range []string{withReplicas, withoutReplicas, `{}`, `null`, `{"f:spec":null}`, `{"f:spec":{"f:replicas":null}}`, `[`, ""} {
		f.Add("argocd-controller", s)
	}
	f.Add("kubectl", withReplicas)
	f.Fuzz(func(t *testing.T, manager, fields string) {
		tool, ok := ReplicasOwner([]metav1.ManagedFieldsEntry{entry(manager, "", fields)})
		if ok && tool.Manager != manager {
			t.Fatalf("owner %q for an entry of %q", tool.Manager, manager)
		}
		if ok && !strings.Contains(fields, "replicas") && !strings.Contains(fields, `\u`) {
			t.Fatalf("owner %q from fields without f:replicas: %q", tool.Manager, fields)
		}
	})
}
