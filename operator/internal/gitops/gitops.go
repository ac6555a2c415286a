package gitops

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Tool is a GitOps controller known by its field manager.
type Tool struct {
	// Manager is its field manager name in managedFields.
	Manager string
	// Product names it for people.
	Product string
	// Fix says how to stop it re-applying spec.replicas.
	Fix string
}

const (
	argoFix = "add ignoreDifferences for jsonPointers [/spec/replicas] to the Application and the sync option RespectIgnoreDifferences=true"
	fluxFix = "leave spec.replicas out of the manifest"
)

// Tools are the GitOps controllers recognised.
var Tools = []Tool{
	{Manager: "argocd-controller", Product: "Argo CD", Fix: argoFix},
	{Manager: "argocd-application-controller", Product: "Argo CD", Fix: argoFix},
	{Manager: "kustomize-controller", Product: "Flux", Fix: fluxFix},
	{Manager: "helm-controller", Product: "Flux", Fix: fluxFix + " (for a HelmRelease, a chart value that leaves it unset)"},
}

// ReplicasOwner returns the GitOps tool whose field manager owns
// spec.replicas in managedFields, if any. Entries whose fieldsV1 cannot be
// read are skipped: an unreadable entry is no evidence.
func ReplicasOwner(entries []metav1.ManagedFieldsEntry) (Tool, bool) {
	for _, e := range entries {
		i := slices.IndexFunc(Tools, func(t Tool) bool { return t.Manager == e.Manager })
		if i < 0 || e.FieldsV1 == nil || e.Subresource != "" {
			continue
		}
		if ownsReplicas(e.FieldsV1.GetRawBytes()) {
			return Tools[i], true
		}
	}
	return Tool{}, false
}

// ownsReplicas says whether a fieldsV1 set holds f:spec.f:replicas.
func ownsReplicas(raw []byte) bool {
	var set struct {
		Spec map[string]json.RawMessage `json:"f:spec"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return false
	}
	_, ok := set.Spec["f:replicas"]
	return ok
}

// Condition is the GitOps condition's status, reason and message.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Judge says what the GitOps condition is. owner is what ReplicasOwner
// found now; prev is the condition as it stands. While the workload is
// paused, or pausing, its replicas belong to Napwake's own scale, so a
// finding made while it ran stands until it runs again.
func Judge(owner Tool, owned bool, phase napwakev1alpha1.Phase, prev *metav1.Condition) Condition {
	if owned {
		return Condition{
			Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonReplicasManagedByGitOps,
			Message: fmt.Sprintf("%s (field manager %s) owns spec.replicas and will wake the workload each time it re-applies it: %s",
				owner.Product, owner.Manager, owner.Fix),
		}
	}
	if prev != nil && prev.Reason == napwakev1alpha1.ReasonReplicasManagedByGitOps &&
		(phase == napwakev1alpha1.PhasePaused || phase == napwakev1alpha1.PhasePausing) {
		return Condition{Status: prev.Status, Reason: prev.Reason, Message: prev.Message}
	}
	return Condition{
		Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonReplicasNotManaged,
		Message: "no GitOps controller owns spec.replicas",
	}
}
