package chart

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// componentValueCases set the values of the components themselves: images,
// flags, caps, logs, replicas, the PDB, the grace period and the admission
// policies.
func componentValueCases() []valueCase {
	return []valueCase{
		{
			name: "defaults.wake ask reaches the operator's --default-wake",
			args: []string{"--set", "defaults.wake=ask"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, operatorName)), "default-wake", "ask")
			},
		},
		{
			name: "defaults.idleAfter reaches --default-idle-after",
			args: []string{"--set", "defaults.idleAfter=2h30m"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, operatorName)), "default-idle-after", "2h30m")
			},
		},
		{
			name: "an operator tag sets the image and the version label kubectl napwake reads",
			args: []string{"--set", "operator.image.tag=v1.2.3-rc.1", "--set", "operator.image.repository=registry.example/napwake-operator"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				d := objs.deployment(t, operatorName)
				if c := container(t, d); c.Image != "registry.example/napwake-operator:v1.2.3-rc.1" {
					t.Errorf("image %q", c.Image)
				}
				for _, labels := range []map[string]string{d.Labels, d.Spec.Template.Labels} {
					if got := labels["app.kubernetes.io/version"]; got != "v1.2.3-rc.1" {
						t.Errorf("version label %q, want v1.2.3-rc.1", got)
					}
				}
				dm := objs.deployment(t, doormanName)
				if c := container(t, dm); c.Image != "napwake-doorman:"+chartAppVer {
					t.Errorf("the doorman's image changed with the operator's: %q", c.Image)
				}
				if got := dm.Spec.Template.Labels["app.kubernetes.io/version"]; got != chartAppVer {
					t.Errorf("the doorman's version label %q changed with the operator's tag", got)
				}
			},
		},
		{
			name: "a digest wins over the tag, per component",
			args: []string{"--set", "operator.image.tag=1.0.0", "--set", "operator.image.digest=" + testDigest, "--set", "doorman.image.digest=" + otherDigest},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				if c := container(t, objs.deployment(t, operatorName)); c.Image != "napwake-operator@"+testDigest {
					t.Errorf("operator image %q", c.Image)
				}
				if c := container(t, objs.deployment(t, doormanName)); c.Image != "napwake-doorman@"+otherDigest {
					t.Errorf("doorman image %q", c.Image)
				}
			},
		},
		{
			name: "the pull policy is each image's own",
			args: []string{"--set", "doorman.image.pullPolicy=Always"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				if c := container(t, objs.deployment(t, doormanName)); c.ImagePullPolicy != corev1.PullAlways {
					t.Errorf("doorman pull policy %q", c.ImagePullPolicy)
				}
				if c := container(t, objs.deployment(t, operatorName)); c.ImagePullPolicy != corev1.PullIfNotPresent {
					t.Errorf("operator pull policy %q", c.ImagePullPolicy)
				}
			},
		},
		{
			name: "doorman.healthCheckUserAgents reaches --health-check-user-agents, comma-separated",
			args: []string{"--set", "doorman.healthCheckUserAgents={UptimeRobot/,Pingdom.com_bot}"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, doormanName)), "health-check-user-agents", "UptimeRobot/,Pingdom.com_bot")
			},
		},
		{
			name: "doorman.passSocketBufferBytes reaches --pass-socket-buffer, 512 KiB unless set",
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, doormanName)), "pass-socket-buffer", "524288")
			},
		},
		{
			name: "doorman.passSocketBufferBytes 0 leaves the buffers to the kernel",
			args: []string{"--set", "doorman.passSocketBufferBytes=0"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, doormanName)), "pass-socket-buffer", "0")
			},
		},
		{
			name: "the port caps reach the operator",
			args: []string{"--set", "doorman.portsPerWorkload=8", "--set", "doorman.portsPerNamespace=64"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				c := container(t, objs.deployment(t, operatorName))
				wantFlag(t, c, "ports-per-workload", "8")
				wantFlag(t, c, "ports-per-namespace", "64")
			},
		},
		{
			name: "doorman.enabled false empties --doorman-service and drops every doorman object",
			args: []string{"--set", "doorman.enabled=false", "--set", "networkPolicy.enabled=true"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, operatorName)), "doorman-service", "")
				for _, u := range objs {
					if u.GetKind() == "CustomResourceDefinition" {
						continue // the operator's as much as the doorman's
					}
					if c := u.GetLabels()["app.kubernetes.io/component"]; c != "operator" && c != "restore" {
						t.Errorf("%s/%s (component %q) rendered without the doorman", u.GetKind(), u.GetName(), c)
					}
				}
			},
		},
		{
			name: "the operator may not create, update or delete Deployments",
			check: func(t *testing.T, objs objects) {
				t.Helper()
				for _, verb := range []string{"create", "delete", "update"} {
					if operatorGrantsOnDeployments(t, objs, verb) {
						t.Errorf("operator may %s Deployments", verb)
					}
				}
			},
		},
		{
			name: "operator.prometheusURL reaches --prometheus-url",
			args: []string{"--set", "operator.prometheusURL=http://prometheus.monitoring:9090"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, operatorName)), "prometheus-url", "http://prometheus.monitoring:9090")
			},
		},
		{
			name: "log settings are each component's own",
			args: []string{"--set", "operator.logLevel=debug", "--set", "doorman.logFormat=text"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, operatorName)), "log-level", "debug")
				wantFlag(t, container(t, objs.deployment(t, operatorName)), "log-format", "json")
				wantFlag(t, container(t, objs.deployment(t, doormanName)), "log-format", "text")
				wantFlag(t, container(t, objs.deployment(t, doormanName)), "log-level", "info")
			},
		},
		{
			name: "extraArgs are appended",
			args: []string{"--set", "operator.extraArgs={--sync-period=5m}", "--set", "doorman.extraArgs={--listen-address=0.0.0.0}"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, operatorName)), "sync-period", "5m")
				wantFlag(t, container(t, objs.deployment(t, doormanName)), "listen-address", "0.0.0.0")
			},
		},
		{
			name: "doorman replicas, PDB and spread follow their values",
			args: []string{"--set", "doorman.replicas=3", "--set", "doorman.podDisruptionBudget.maxUnavailable=2", "--set", "doorman.topologySpreadWhenUnsatisfiable=DoNotSchedule"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				d := objs.deployment(t, doormanName)
				if *d.Spec.Replicas != 3 {
					t.Errorf("replicas %d", *d.Spec.Replicas)
				}
				if w := d.Spec.Template.Spec.TopologySpreadConstraints[0].WhenUnsatisfiable; w != corev1.DoNotSchedule {
					t.Errorf("whenUnsatisfiable %q", w)
				}
				var pdb policyv1.PodDisruptionBudget
				into(t, objs.get(t, "PodDisruptionBudget", doormanName), &pdb)
				if pdb.Spec.MaxUnavailable.IntValue() != 2 {
					t.Errorf("PDB maxUnavailable %v", pdb.Spec.MaxUnavailable)
				}
			},
		},
		{
			name: "the PDB can be turned off",
			args: []string{"--set", "doorman.podDisruptionBudget.enabled=false"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				if pdb := objs.find("PodDisruptionBudget", doormanName); pdb != nil {
					t.Error("PDB rendered while disabled")
				}
			},
		},
		{
			name: "a longer preStop sleep with a grace period to match",
			args: []string{"--set", "doorman.preStopSleepSeconds=10", "--set", "doorman.terminationGracePeriodSeconds=58"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				d := objs.deployment(t, doormanName)
				if s := container(t, d).Lifecycle.PreStop.Sleep.Seconds; s != 10 {
					t.Errorf("preStop sleep %d", s)
				}
				if g := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 58 {
					t.Errorf("grace %d", g)
				}
			},
		},
		{
			name: "admissionPolicy disabled renders no admission policy",
			args: []string{"--set", "doorman.admissionPolicy.enabled=false"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				if n := len(objs.ofKind("ValidatingAdmissionPolicy")) + len(objs.ofKind("ValidatingAdmissionPolicyBinding")); n != 0 {
					t.Errorf("%d admission objects rendered while disabled", n)
				}
			},
		},
		{
			name: "rbac.aggregateClusterRoles false keeps people's roles out of view, edit and admin",
			args: []string{"--set", "rbac.aggregateClusterRoles=false"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				for _, name := range []string{viewRole, editRole} {
					for k := range objs.get(t, "ClusterRole", name).GetLabels() {
						if strings.HasPrefix(k, aggregateTo) {
							t.Errorf("ClusterRole %s labelled %s while rbac.aggregateClusterRoles is false", name, k)
						}
					}
				}
			},
		},
		{
			name: "the admission policies name the release's doorman and operator ServiceAccounts",
			args: []string{"--namespace", "elsewhere"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				for _, p := range objs.ofKind("ValidatingAdmissionPolicy") {
					conds, _, _ := unstructured.NestedSlice(p.Object, "spec", "matchConditions")
					expr := conds[0].(map[string]any)["expression"].(string)
					sa := "napwake-doorman"
					if strings.HasPrefix(p.GetName(), operatorName) {
						sa = "napwake-operator"
					}
					if !strings.Contains(expr, `"system:serviceaccount:elsewhere:`+sa+`"`) {
						t.Errorf("%s matches %q, want %s in namespace elsewhere", p.GetName(), expr, sa)
					}
				}
			},
		},
	}
}
