package chart

import "testing"

// TestTargetKindsAreGrantedOnlyWhenListed: operator.targetKinds, empty by
// default, gives the operator --target-kinds and, for each kind listed,
// get, list and watch on its resource and get, update and patch on its
// scale, and get on ReplicaSets (to follow a calling pod's owners to such
// a kind for learned dependencies), and nothing more: least privilege
// stays the default (docs/pause.md#other-kinds-of-workload).
func TestTargetKindsAreGrantedOnlyWhenListed(t *testing.T) {
	read, scale := []string{"get", "list", "watch"}, []string{"get", "update", "patch"}
	off := render(t)
	wantNoFlag(t, container(t, off.deployment(t, operatorName)), "target-kinds")
	for _, v := range append(read, scale...) {
		if operatorGrants(t, off, "argoproj.io", "rollouts", v) || operatorGrants(t, off, "argoproj.io", "rollouts/scale", v) {
			t.Errorf("the operator may %s Rollouts with operator.targetKinds empty", v)
		}
	}
	if operatorGrants(t, off, "apps", "replicasets", "get") {
		t.Error("the operator may get ReplicaSets with operator.targetKinds empty")
	}

	on := render(t, "--set", "operator.targetKinds[0].apiGroup=argoproj.io", "--set", "operator.targetKinds[0].version=v1alpha1",
		"--set", "operator.targetKinds[0].kind=Rollout", "--set", "operator.targetKinds[0].resource=rollouts")
	wantFlag(t, container(t, on.deployment(t, operatorName)), "target-kinds", "argoproj.io/v1alpha1/Rollout")
	for _, v := range read {
		if !operatorGrants(t, on, "argoproj.io", "rollouts", v) {
			t.Errorf("the operator may not %s Rollouts", v)
		}
	}
	for _, v := range scale {
		if !operatorGrants(t, on, "argoproj.io", "rollouts/scale", v) {
			t.Errorf("the operator may not %s rollouts/scale", v)
		}
	}
	if !operatorGrants(t, on, "apps", "replicasets", "get") {
		t.Error("the operator may not get ReplicaSets to follow a Rollout's pod to its Rollout")
	}
	for _, v := range []string{"list", "watch", "update", "patch", "delete"} {
		if operatorGrants(t, on, "apps", "replicasets", v) {
			t.Errorf("the operator may %s ReplicaSets; it only gets one at a time", v)
		}
	}
	for _, v := range []string{"create", "update", "patch", "delete"} {
		if operatorGrants(t, on, "argoproj.io", "rollouts", v) {
			t.Errorf("the operator may %s Rollouts themselves; only their scale is written", v)
		}
	}
}
