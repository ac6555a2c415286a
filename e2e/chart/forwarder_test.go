package chart

import (
	"strings"
	"testing"
)

// TestTheNEGForwarderIsWiredWhenOn: doorman.negForwarder.enabled gives the
// operator its flags and the forwarder image, create and delete on
// Deployments (narrowed by an admission policy to the forwarders), and
// admits the forwarders to the doorman's routing ports.
func TestTheNEGForwarderIsWiredWhenOn(t *testing.T) {
	off := render(t)
	if operatorGrantsOnDeployments(t, off, "create") {
		t.Error("the operator may create Deployments with the forwarder off")
	}
	wantNoFlag(t, container(t, off.deployment(t, operatorName)), "neg-forwarder")

	objs := render(t, "--set", "doorman.negForwarder.enabled=true", "--set", "doorman.negForwarder.image.repository=registry.example/napwake-forwarder",
		"--set", "doorman.negForwarder.image.tag=v0.1.0", "--set", "doorman.negForwarder.replicas=3",
		"--set", "networkPolicy.enabled=true", "--set", "doorman.networkPolicy.ingressFrom[0].podSelector.matchLabels.role=caller")
	c := container(t, objs.deployment(t, operatorName))
	wantFlag(t, c, "neg-forwarder", "true")
	wantFlag(t, c, "forwarder-image", "registry.example/napwake-forwarder:v0.1.0")
	wantFlag(t, c, "forwarder-replicas", "3")
	wantNoFlag(t, c, "forwarder-doorman-host")
	for _, verb := range []string{"create", "delete", "patch"} {
		if !operatorGrantsOnDeployments(t, objs, verb) {
			t.Errorf("the operator may not %s Deployments with the forwarder on", verb)
		}
	}
	if operatorGrantsOnDeployments(t, objs, "update") {
		t.Error("the operator may update Deployments whole")
	}
	policy := objs.get(t, "ValidatingAdmissionPolicy", operatorName+"-deployments-only-forwarders")
	if s := strings.Join(validationExpressions(policy.Object), " "); !strings.Contains(s, "startsWith('napwake-forwarder-')") || !strings.Contains(s, `'`+namespace+`'`) && !strings.Contains(s, `"`+namespace+`"`) {
		t.Errorf("the policy's validations %q do not narrow to napwake-forwarder-* of %s", s, namespace)
	}
	objs.get(t, "ValidatingAdmissionPolicyBinding", operatorName+"-deployments-only-forwarders")

	np := callersPolicy(t, objs)
	found := false
	for _, rule := range np.Spec.Ingress {
		for _, peer := range rule.From {
			if peer.PodSelector != nil && peer.PodSelector.MatchLabels["app.kubernetes.io/name"] == "napwake-forwarder" &&
				peer.PodSelector.MatchLabels["napwake.dev/operator"] == namespace && peer.NamespaceSelector != nil && len(peer.NamespaceSelector.MatchLabels) == 0 {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("the doorman's NetworkPolicy does not admit forwarders from any namespace: %+v", np.Spec.Ingress)
	}
}

func validationExpressions(obj map[string]any) []string {
	spec, _ := obj["spec"].(map[string]any)
	vs, _ := spec["validations"].([]any)
	var out []string
	for _, v := range vs {
		if m, ok := v.(map[string]any); ok {
			if e, ok := m["expression"].(string); ok {
				out = append(out, e)
			}
		}
	}
	return out
}
