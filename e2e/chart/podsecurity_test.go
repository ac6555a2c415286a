package chart

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// everythingOn turns on every optional object, so checks see them all.
var everythingOn = []string{
	"--set", "networkPolicy.enabled=true",
	"--set", "doorman.negForwarder.enabled=true",
	"--set", "monitoring.serviceMonitor.enabled=true",
	"--set", "monitoring.prometheusRule.enabled=true",
	"--set", "doorman.networkPolicy.egress.enabled=true",
	"--set", "doorman.networkPolicy.egress.podCIDRs={10.244.0.0/16}",
	"--set", "doorman.networkPolicy.egress.apiServer={172.18.0.2/32}",
	"-f", "testdata/ingress-from.yaml",
}

// restrictedViolations evaluates a pod template with the Pod Security
// admission's own checks at the "restricted" level, latest version.
func restrictedViolations(t testing.TB, tmpl corev1.PodTemplateSpec) []string {
	t.Helper()
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &tmpl.ObjectMeta, &tmpl.Spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return out
}

func TestEveryPodMeetsPodSecurityRestricted(t *testing.T) {
	objs := render(t, everythingOn...)
	deployments := objs.ofKind("Deployment")
	if len(deployments) != 2 {
		t.Fatalf("deployments %s, want the operator's and the doorman's", deployments)
	}
	for _, u := range deployments {
		d := objs.deployment(t, u.GetName())
		if v := restrictedViolations(t, d.Spec.Template); len(v) != 0 {
			t.Errorf("%s violates Pod Security restricted: %q", d.Name, v)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s/%s: root filesystem is writable", d.Name, c.Name)
			}
			if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Errorf("%s/%s: runAsNonRoot not set on the container", d.Name, c.Name)
			}
		}
		if u := d.Spec.Template.Spec.SecurityContext.RunAsUser; u == nil || *u != 65532 {
			t.Errorf("%s: runAsUser %v, want 65532, the images' user", d.Name, u)
		}
	}
	// The uninstall hook's Job runs the operator's image with its security
	// contexts, in the same namespace.
	if v := restrictedViolations(t, restoreJob(t, objs).Spec.Template); len(v) != 0 {
		t.Errorf("the uninstall hook violates Pod Security restricted: %q", v)
	}
}

// TestThePodSecurityCheckCanFail keeps the check above honest: a template
// without the chart's security contexts fails it.
func TestThePodSecurityCheckCanFail(t *testing.T) {
	d := render(t).deployment(t, doormanName)
	d.Spec.Template.Spec.SecurityContext = nil
	d.Spec.Template.Spec.Containers[0].SecurityContext = nil
	if v := restrictedViolations(t, d.Spec.Template); len(v) < 3 {
		t.Errorf("a pod without security contexts passes restricted: %q", v)
	}
}
