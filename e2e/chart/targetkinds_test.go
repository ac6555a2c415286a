package chart

import "testing"

// TestTargetKindsAreGrantedOnlyWhenListed: operator.targetKinds, empty by
// default, gives the operator --target-kinds and, for each kind listed,
// get, list and watch on its resource and get, update and patch on its
// scale, and nothing more: least privilege stays the default
// (docs/pause.md#other-kinds-of-workload).
func TestTargetKindsAreGrantedOnlyWhenListed(t *testing.T) {
	read, scale := []string{"get", "list", "watch"}, []string{"get", "update", "patch"}
	off := render(t)
	wantNoFlag(t, container(t, off.deployment(t, operatorName)), "target-kinds")
	for _, v := range append(read, scale...) {
		if operatorGrants(t, off, "argoproj.io", "rollouts", v) || operatorGrants(t, off, "argoproj.io", "rollouts/scale", v) {
			t.Errorf("the operator may %s Rollouts with operator.targetKinds empty", v)
		}
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
	for _, v := range []string{"create", "update", "patch", "delete"} {
		if operatorGrants(t, on, "argoproj.io", "rollouts", v) {
			t.Errorf("the operator may %s Rollouts themselves; only their scale is written", v)
		}
	}
}
