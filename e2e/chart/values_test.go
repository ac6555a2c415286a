package chart

import (
	"reflect"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
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
			name: "operator.targetKinds reaches --target-kinds and the operator's ClusterRole",
			args: []string{"--set", "operator.targetKinds[0].apiGroup=argoproj.io", "--set", "operator.targetKinds[0].version=v1alpha1",
				"--set", "operator.targetKinds[0].kind=Rollout", "--set", "operator.targetKinds[0].resource=rollouts",
				"--set", "operator.targetKinds[1].version=v1",
				"--set", "operator.targetKinds[1].kind=ReplicationController", "--set", "operator.targetKinds[1].resource=replicationcontrollers"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, operatorName)), "target-kinds", "argoproj.io/v1alpha1/Rollout,v1/ReplicationController")
				if !operatorGrants(t, objs, "argoproj.io", "rollouts/scale", "update") || !operatorGrants(t, objs, "", "replicationcontrollers", "watch") {
					t.Error("the listed kinds are not granted")
				}
			},
		},
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
			name: "operator.prometheusHTTPConfig mounts its Secret read-only and reaches --prometheus-http-config, beside extraVolumes",
			args: []string{"--set", "operator.prometheusURL=https://mimir.example/prometheus",
				"--set", "operator.prometheusHTTPConfig.secretName=mimir-query", "--set", "operator.prometheusHTTPConfig.key=tenant.yaml",
				"--set-json", `operator.extraVolumes=[{"name":"ca","configMap":{"name":"corp-ca"}}]`,
				"--set-json", `operator.extraVolumeMounts=[{"name":"ca","mountPath":"/etc/ssl/corp","readOnly":true}]`},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				op := objs.deployment(t, operatorName).Spec.Template.Spec
				wantFlag(t, op.Containers[0], "prometheus-http-config", "/etc/napwake/prometheus/tenant.yaml")
				if v := op.Volumes; len(v) != 2 || v[0].Name != "prometheus-http-config" || v[0].Secret == nil || v[0].Secret.SecretName != "mimir-query" || v[1].Name != "ca" {
					t.Errorf("operator volumes %+v, want the Secret mimir-query and extraVolumes' ca", v)
				}
				if m := op.Containers[0].VolumeMounts; len(m) != 2 || m[0].Name != "prometheus-http-config" || m[0].MountPath != "/etc/napwake/prometheus" || !m[0].ReadOnly || m[0].SubPath != "" || m[1].Name != "ca" {
					t.Errorf("operator volume mounts %+v, want the whole Secret read-only at /etc/napwake/prometheus, then ca", m)
				}
				if hook := restoreJob(t, objs).Spec.Template.Spec; len(hook.Volumes) != 1 || hook.Volumes[0].Name != "ca" {
					t.Errorf("uninstall hook volumes %+v, want only extraVolumes'", hook.Volumes)
				}
			},
		},
		{
			name: "operator.prometheusHTTPConfig's key defaults to http.yaml; without a Secret nothing is mounted",
			args: []string{"--set", "operator.prometheusURL=https://mimir.example/prometheus", "--set", "operator.prometheusHTTPConfig.secretName=mimir-query"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				wantFlag(t, container(t, objs.deployment(t, operatorName)), "prometheus-http-config", "/etc/napwake/prometheus/http.yaml")
				plain := render(t, "--set", "operator.prometheusURL=https://mimir.example/prometheus").deployment(t, operatorName).Spec.Template.Spec
				wantNoFlag(t, plain.Containers[0], "prometheus-http-config")
				if len(plain.Volumes) != 0 || len(plain.Containers[0].VolumeMounts) != 0 {
					t.Errorf("without a Secret: volumes %+v mounts %+v, want none", plain.Volumes, plain.Containers[0].VolumeMounts)
				}
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

// podKnobCases set what users of other charts look for on each component's
// pods (cert-manager's and KEDA's charts): ServiceAccount annotations,
// security contexts, extra env and volumes, spread constraints, a global
// image registry, and the operator's settings on the uninstall hook.
func podKnobCases() []valueCase {
	return []valueCase{
		{
			name: "serviceAccount.annotations reach each component's ServiceAccount only",
			args: []string{"--set", "operator.serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/op",
				"--set", "doorman.serviceAccount.annotations.iam\\.gke\\.io/gcp-service-account=dm@p.iam.gserviceaccount.com"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				op, dm := objs.get(t, "ServiceAccount", operatorName).GetAnnotations(), objs.get(t, "ServiceAccount", doormanName).GetAnnotations()
				if len(op) != 1 || op["eks.amazonaws.com/role-arn"] != "arn:aws:iam::1:role/op" {
					t.Errorf("operator ServiceAccount annotations %v", op)
				}
				if len(dm) != 1 || dm["iam.gke.io/gcp-service-account"] != "dm@p.iam.gserviceaccount.com" {
					t.Errorf("doorman ServiceAccount annotations %v", dm)
				}
			},
		},
		{
			name: "global.imageRegistry prefixes every image: the operator's, the doorman's, the forwarder's and the hook's",
			args: []string{"--set", "global.imageRegistry=registry.example:5000/mirror/", "--set", "doorman.negForwarder.enabled=true",
				"--set", "doorman.image.digest=" + testDigest},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				op := container(t, objs.deployment(t, operatorName))
				if op.Image != "registry.example:5000/mirror/napwake-operator:"+chartAppVer {
					t.Errorf("operator image %q", op.Image)
				}
				if c := container(t, objs.deployment(t, doormanName)); c.Image != "registry.example:5000/mirror/napwake-doorman@"+testDigest {
					t.Errorf("doorman image %q", c.Image)
				}
				wantFlag(t, op, "forwarder-image", "registry.example:5000/mirror/napwake-forwarder:"+chartAppVer)
				if c := restoreJob(t, objs).Spec.Template.Spec.Containers[0]; c.Image != op.Image {
					t.Errorf("hook image %q, want the operator's %q", c.Image, op.Image)
				}
			},
		},
		{
			name: "podSecurityContext runAsUser and runAsGroup null drop the UID from the operator's pods and the hook's, for OpenShift",
			args: []string{"--set", "operator.podSecurityContext.runAsUser=null", "--set", "operator.podSecurityContext.runAsGroup=null"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				for name, tmpl := range map[string]corev1.PodTemplateSpec{
					"operator": objs.deployment(t, operatorName).Spec.Template,
					"hook":     restoreJob(t, objs).Spec.Template,
				} {
					sc := tmpl.Spec.SecurityContext
					if sc.RunAsUser != nil || sc.RunAsGroup != nil {
						t.Errorf("%s: runAsUser %v runAsGroup %v, want neither", name, sc.RunAsUser, sc.RunAsGroup)
					}
					if v := restrictedViolations(t, tmpl); len(v) != 0 {
						t.Errorf("%s without a UID violates Pod Security restricted: %q", name, v)
					}
				}
				if u := objs.deployment(t, doormanName).Spec.Template.Spec.SecurityContext.RunAsUser; u == nil || *u != 65532 {
					t.Errorf("the doorman's runAsUser %v changed with the operator's", u)
				}
			},
		},
		{
			name: "security contexts reach their component, the operator's also the hook",
			args: []string{"--set", "doorman.podSecurityContext.fsGroup=2000", "--set", "operator.securityContext.runAsUser=1000",
				"--set", "doorman.securityContext.readOnlyRootFilesystem=false"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				dm := objs.deployment(t, doormanName)
				if g := dm.Spec.Template.Spec.SecurityContext.FSGroup; g == nil || *g != 2000 {
					t.Errorf("doorman fsGroup %v", g)
				}
				if sc := container(t, dm).SecurityContext; *sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot {
					t.Errorf("doorman container security context %+v, want only readOnlyRootFilesystem changed", sc)
				}
				for name, c := range map[string]corev1.Container{
					"operator": container(t, objs.deployment(t, operatorName)),
					"hook":     restoreJob(t, objs).Spec.Template.Spec.Containers[0],
				} {
					if u := c.SecurityContext.RunAsUser; u == nil || *u != 1000 {
						t.Errorf("%s container runAsUser %v, want 1000", name, u)
					}
				}
			},
		},
		{
			name: "extraEnv follows each component's own env, and the uninstall hook has the operator's",
			args: []string{"--set-json", `operator.extraEnv=[{"name":"HTTPS_PROXY","value":"http://proxy:3128"}]`,
				"--set-json", `doorman.extraEnv=[{"name":"GOMEMLIMIT","valueFrom":{"resourceFieldRef":{"resource":"limits.memory"}}}]`},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				op, dm := container(t, objs.deployment(t, operatorName)).Env, container(t, objs.deployment(t, doormanName)).Env
				if len(op) != 3 || op[0].Name != "POD_NAME" || op[2].Name != "HTTPS_PROXY" || op[2].Value != "http://proxy:3128" {
					t.Errorf("operator env %+v, want POD_NAME, POD_NAMESPACE, then HTTPS_PROXY", op)
				}
				last := dm[len(dm)-1]
				if len(dm) != 5 || last.Name != "GOMEMLIMIT" || last.ValueFrom.ResourceFieldRef.Resource != "limits.memory" {
					t.Errorf("doorman env %+v, want its four, then GOMEMLIMIT", dm)
				}
				if hook := restoreJob(t, objs).Spec.Template.Spec.Containers[0].Env; len(hook) != 1 || hook[0].Name != "HTTPS_PROXY" {
					t.Errorf("uninstall hook env %+v, want the operator's HTTPS_PROXY: it reaches the same API server", hook)
				}
			},
		},
		{
			name: "extraVolumes and extraVolumeMounts reach their component only, and the hook the operator's",
			args: []string{"--set-json", `operator.extraVolumes=[{"name":"ca","configMap":{"name":"corp-ca"}}]`,
				"--set-json", `operator.extraVolumeMounts=[{"name":"ca","mountPath":"/etc/ssl/corp","readOnly":true}]`},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				op := objs.deployment(t, operatorName).Spec.Template.Spec
				if v := op.Volumes; len(v) != 1 || v[0].Name != "ca" || v[0].ConfigMap == nil || v[0].ConfigMap.Name != "corp-ca" {
					t.Errorf("operator volumes %+v", v)
				}
				if m := op.Containers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != "/etc/ssl/corp" || !m[0].ReadOnly {
					t.Errorf("operator volume mounts %+v", m)
				}
				hook := restoreJob(t, objs).Spec.Template.Spec
				if len(hook.Volumes) != 1 || len(hook.Containers[0].VolumeMounts) != 1 || hook.Containers[0].VolumeMounts[0].MountPath != "/etc/ssl/corp" {
					t.Errorf("uninstall hook volumes %+v mounts %+v, want the operator's", hook.Volumes, hook.Containers[0].VolumeMounts)
				}
				dm := objs.deployment(t, doormanName).Spec.Template.Spec
				if len(dm.Volumes) != 0 || len(dm.Containers[0].VolumeMounts) != 0 {
					t.Errorf("doorman volumes %+v mounts %+v, want none", dm.Volumes, dm.Containers[0].VolumeMounts)
				}
			},
		},
		{
			name: "topologySpreadConstraints without a labelSelector spread the component's own pods, the doorman's after its spread across nodes",
			args: []string{"--set-json", `operator.topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}]`,
				"--set-json", `doorman.topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"tier":"edge"}}}]`},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				op := objs.deployment(t, operatorName).Spec.Template.Spec.TopologySpreadConstraints
				if len(op) != 1 || op[0].TopologyKey != "topology.kubernetes.io/zone" || op[0].LabelSelector == nil ||
					op[0].LabelSelector.MatchLabels["control-plane"] != "controller-manager" {
					t.Errorf("operator spread %+v, want across zones over the operator's pods", op)
				}
				dm := objs.deployment(t, doormanName).Spec.Template.Spec.TopologySpreadConstraints
				if len(dm) != 2 || dm[0].TopologyKey != "kubernetes.io/hostname" || dm[1].TopologyKey != "topology.kubernetes.io/zone" ||
					dm[1].WhenUnsatisfiable != corev1.DoNotSchedule || !reflect.DeepEqual(dm[1].LabelSelector.MatchLabels, map[string]string{"tier": "edge"}) {
					t.Errorf("doorman spread %+v, want across nodes, then across zones with its own selector", dm)
				}
			},
		},
		{
			name: "a doorman topologySpreadConstraint across nodes replaces the built-in one, which the API server would refuse as a duplicate",
			args: []string{"--set-json", `doorman.topologySpreadConstraints=[{"maxSkew":2,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway"}]`},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				dm := objs.deployment(t, doormanName).Spec.Template.Spec.TopologySpreadConstraints
				if len(dm) != 1 || dm[0].TopologyKey != "kubernetes.io/hostname" || dm[0].MaxSkew != 2 {
					t.Errorf("doorman spread %+v, want only the user's, across nodes with maxSkew 2", dm)
				}
			},
		},
		{
			name: "the uninstall hook takes the operator's placement, priority class and the pull secrets",
			args: []string{"--set", "operator.nodeSelector.pool=system", "--set", "operator.priorityClassName=system-cluster-critical",
				"--set-json", `operator.tolerations=[{"key":"system","operator":"Exists"}]`, "--set-json", `imagePullSecrets=[{"name":"regcred"}]`},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				spec := restoreJob(t, objs).Spec.Template.Spec
				if spec.NodeSelector["pool"] != "system" || spec.PriorityClassName != "system-cluster-critical" ||
					len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "system" ||
					len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "regcred" {
					t.Errorf("hook pod spec %+v, want the operator's placement, priority class and pull secrets", spec)
				}
			},
		},
	}
}

// restoreJob is the uninstall hook's Job.
func restoreJob(t testing.TB, objs objects) *batchv1.Job {
	t.Helper()
	var j batchv1.Job
	into(t, objs.get(t, "Job", operatorName+"-restore"), &j)
	return &j
}
