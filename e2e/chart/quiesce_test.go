package chart

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// operatorGrants says whether the operator's ClusterRole gives verb on
// resource of group.
func operatorGrants(t testing.TB, objs objects, group, resource, verb string) bool {
	t.Helper()
	var cr rbacv1.ClusterRole
	into(t, objs.get(t, "ClusterRole", operatorName), &cr)
	for _, r := range cr.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// TestKEDAAndCronJobsAreWiredOnlyWhenOn: autoscalers.keda.enabled and
// cronJobs.suspend, off by default, each give the operator its flag and
// its RBAC rule, and nothing without them.
func TestKEDAAndCronJobsAreWiredOnlyWhenOn(t *testing.T) {
	verbs := []string{"get", "list", "watch", "patch"}
	off := render(t)
	c := container(t, off.deployment(t, operatorName))
	wantNoFlag(t, c, "keda")
	wantNoFlag(t, c, "suspend-cronjobs")
	for _, v := range verbs {
		if operatorGrants(t, off, "keda.sh", "scaledobjects", v) {
			t.Errorf("the operator may %s ScaledObjects with autoscalers.keda.enabled off", v)
		}
		if operatorGrants(t, off, "batch", "cronjobs", v) {
			t.Errorf("the operator may %s CronJobs with cronJobs.suspend off", v)
		}
	}

	on := render(t, "--set", "autoscalers.keda.enabled=true", "--set", "cronJobs.suspend=true")
	c = container(t, on.deployment(t, operatorName))
	wantFlag(t, c, "keda", "true")
	wantFlag(t, c, "suspend-cronjobs", "true")
	for _, v := range verbs {
		if !operatorGrants(t, on, "keda.sh", "scaledobjects", v) {
			t.Errorf("the operator may not %s ScaledObjects with autoscalers.keda.enabled on", v)
		}
		if !operatorGrants(t, on, "batch", "cronjobs", v) {
			t.Errorf("the operator may not %s CronJobs with cronJobs.suspend on", v)
		}
	}
	for _, v := range []string{"create", "update", "delete"} {
		if operatorGrants(t, on, "keda.sh", "scaledobjects", v) || operatorGrants(t, on, "batch", "cronjobs", v) {
			t.Errorf("the operator may %s ScaledObjects or CronJobs", v)
		}
	}
}
