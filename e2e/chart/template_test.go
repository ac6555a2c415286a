package chart

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	operatorName  = release + "-operator"
	doormanName   = release + "-doorman"
	doormanPods   = release + "-doorman-pods"
	wakeKeySecret = release + "-doorman-wake-key"
	doormanUser   = "system:serviceaccount:" + namespace + ":" + doormanName
	operatorUser  = "system:serviceaccount:" + namespace + ":" + operatorName
	chartAppVer   = "0.1.0"
	testDigest    = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	otherDigest   = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

// container returns a Deployment's only container.
func container(t testing.TB, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%s has %d containers, want 1", d.Name, n)
	}
	return d.Spec.Template.Spec.Containers[0]
}

// flagValue returns the value of --name=value in args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func wantFlag(t testing.TB, c corev1.Container, name, want string) {
	t.Helper()
	got, ok := flagValue(c.Args, name)
	if !ok {
		t.Fatalf("%s: no --%s in %q", c.Name, name, c.Args)
	}
	if got != want {
		t.Fatalf("%s: --%s=%q, want %q", c.Name, name, got, want)
	}
}

func wantNoFlag(t testing.TB, c corev1.Container, name string) {
	t.Helper()
	if got, ok := flagValue(c.Args, name); ok {
		t.Fatalf("%s: --%s=%q present, want it absent", c.Name, name, got)
	}
}

// clusterRoleGrants says whether a rendered ClusterRole grants verb on resource.
func clusterRoleGrants(t testing.TB, objs objects, name, group, resource, verb string) bool {
	t.Helper()
	var cr rbacv1.ClusterRole
	into(t, objs.get(t, "ClusterRole", name), &cr)
	for _, r := range cr.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

func TestDefaultsRenderTheWholeInstall(t *testing.T) {
	objs := render(t)
	for _, want := range []struct{ kind, name string }{
		{"ServiceAccount", operatorName}, {"Deployment", operatorName}, {"Service", operatorName + "-metrics"},
		{"ClusterRole", operatorName}, {"ClusterRoleBinding", operatorName},
		{"Role", operatorName + "-leader-election"}, {"RoleBinding", operatorName + "-leader-election"},
		{"ServiceAccount", doormanName}, {"Deployment", doormanName}, {"Service", doormanName}, {"Service", doormanPods},
		{"PodDisruptionBudget", doormanName},
		{"ClusterRole", doormanName}, {"ClusterRoleBinding", doormanName},
		{"ValidatingAdmissionPolicy", doormanName + "-changes-only-wake-annotations"},
		{"ValidatingAdmissionPolicyBinding", doormanName + "-changes-only-wake-annotations"},
		{"ValidatingAdmissionPolicy", doormanName + "-only-sets-last-request"},
		{"ValidatingAdmissionPolicyBinding", doormanName + "-only-sets-last-request"},
	} {
		objs.get(t, want.kind, want.name)
	}
	for _, off := range []string{"NetworkPolicy", "ServiceMonitor", "PrometheusRule"} {
		if got := objs.ofKind(off); len(got) != 0 {
			t.Errorf("%s rendered by default: %s", off, got)
		}
	}
	if got := len(objs); got != 18 {
		t.Errorf("rendered %d objects, want the 18 above: %s", got, objs)
	}
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" && ns != namespace {
			t.Errorf("%s/%s in namespace %q, want %q", u.GetKind(), u.GetName(), ns, namespace)
		}
	}
}

func TestOperatorDeploymentFollowsTheContract(t *testing.T) {
	objs := render(t)
	d := objs.deployment(t, operatorName)
	c := container(t, d)
	if c.Image != "napwake-operator:"+chartAppVer {
		t.Errorf("image %q, want napwake-operator:%s", c.Image, chartAppVer)
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("pull policy %q, want IfNotPresent (images come from the node's containerd)", c.ImagePullPolicy)
	}
	for flag, want := range map[string]string{
		"leader-elect":              "true",
		"metrics-bind-address":      ":8080",
		"health-probe-bind-address": ":8081",
		"default-wake":              "request",
		"default-idle-after":        "30m",
		"doorman-service":           namespace + "/" + doormanPods,
		"ports-per-workload":        "32",
		"ports-per-namespace":       "256",
		"log-format":                "json",
		"log-level":                 "info",
	} {
		wantFlag(t, c, flag, want)
	}
	wantNoFlag(t, c, "prometheus-url")
	if len(c.Env) != 1 || c.Env[0].Name != "POD_NAMESPACE" || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("env %+v, want POD_NAMESPACE from metadata.namespace", c.Env)
	}
	for _, labels := range []map[string]string{d.Labels, d.Spec.Template.Labels} {
		for k, want := range map[string]string{
			"control-plane":             "controller-manager",
			"app.kubernetes.io/name":    "napwake",
			"app.kubernetes.io/version": chartAppVer,
		} {
			if labels[k] != want {
				t.Errorf("label %s=%q, want %q (kubectl napwake version reads it)", k, labels[k], want)
			}
		}
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.ReadinessProbe.HTTPGet.Port.String() != "health" ||
		c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes %+v / %+v, want /readyz and /healthz on health (8081)", c.ReadinessProbe, c.LivenessProbe)
	}
	if d.Spec.Template.Spec.ServiceAccountName != operatorName {
		t.Errorf("service account %q, want %q", d.Spec.Template.Spec.ServiceAccountName, operatorName)
	}
}

func TestDoormanDeploymentFollowsTheContract(t *testing.T) {
	objs := render(t)
	d := objs.deployment(t, doormanName)
	c := container(t, d)
	spec := d.Spec.Template.Spec
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *d.Spec.Replicas)
	}
	if d.Spec.Template.Labels["control-plane"] != "doorman" {
		t.Errorf("pod labels %v, want control-plane: doorman", d.Spec.Template.Labels)
	}
	if c.Image != "napwake-doorman:"+chartAppVer {
		t.Errorf("image %q", c.Image)
	}
	wantFlag(t, c, "metrics-bind-address", ":8443")
	wantFlag(t, c, "health-probe-bind-address", ":8081")
	wantNoFlag(t, c, "wake-key-secret")
	wantNoFlag(t, c, "health-check-user-agents")
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.ValueFrom.FieldRef.FieldPath
	}
	for name, path := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_IPS": "status.podIPs", "POD_IP": "status.podIP"} {
		if env[name] != path {
			t.Errorf("env %s from %q, want %q", name, env[name], path)
		}
	}
	if got := *spec.TerminationGracePeriodSeconds; got != 45 {
		t.Errorf("terminationGracePeriodSeconds %d, want 45 (5 s preStop sleep + 40 s shutdown)", got)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds != 5 {
		t.Errorf("preStop %+v, want a 5 s sleep action (the image has no shell)", c.Lifecycle)
	} else if c.Lifecycle.PreStop.Exec != nil {
		t.Errorf("preStop execs %v: the image has no shell", c.Lifecycle.PreStop.Exec.Command)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.ReadinessProbe.HTTPGet.Port.String() != "health" {
		t.Errorf("readiness %+v, want /readyz on health", c.ReadinessProbe.HTTPGet)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["metrics"] != 8443 || ports["health"] != 8081 {
		t.Errorf("ports %v, want metrics 8443 and health 8081", ports)
	}
	if len(spec.TopologySpreadConstraints) != 1 {
		t.Fatalf("topology spread %+v, want one constraint", spec.TopologySpreadConstraints)
	}
	tsc := spec.TopologySpreadConstraints[0]
	if tsc.TopologyKey != "kubernetes.io/hostname" || tsc.MaxSkew != 1 || tsc.WhenUnsatisfiable != corev1.ScheduleAnyway ||
		tsc.LabelSelector.MatchLabels["control-plane"] != "doorman" {
		t.Errorf("topology spread %+v, want across nodes, skew 1, ScheduleAnyway, over the doorman's pods", tsc)
	}
	if d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("rolling update may take a doorman down before its successor is Ready")
	}
	if d.Spec.MinReadySeconds != 5 {
		t.Errorf("minReadySeconds %d, want 5: an old doorman stops 5 s after its successor is Ready", d.Spec.MinReadySeconds)
	}

	var pdb policyv1.PodDisruptionBudget
	into(t, objs.get(t, "PodDisruptionBudget", doormanName), &pdb)
	if pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels["control-plane"] != "doorman" {
		t.Errorf("PDB %+v, want maxUnavailable 1 over the doorman's pods", pdb.Spec)
	}

	var pods corev1.Service
	into(t, objs.get(t, "Service", doormanPods), &pods)
	if pods.Spec.ClusterIP != corev1.ClusterIPNone || pods.Spec.Selector["control-plane"] != "doorman" {
		t.Errorf("%s: clusterIP %q selector %v, want headless over control-plane: doorman", doormanPods, pods.Spec.ClusterIP, pods.Spec.Selector)
	}
}

// TestEachValueReachesItsObject sets one value (or a few that belong
// together) and checks its effect on the rendered objects.
func TestEachValueReachesItsObject(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, objs objects)
	}{
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
					if c := u.GetLabels()["app.kubernetes.io/component"]; c != "operator" {
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
					if clusterRoleGrants(t, objs, operatorName, "apps", "deployments", verb) {
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
			args: []string{"--set", "doorman.preStopSleepSeconds=10", "--set", "doorman.terminationGracePeriodSeconds=50"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				d := objs.deployment(t, doormanName)
				if s := container(t, d).Lifecycle.PreStop.Sleep.Seconds; s != 10 {
					t.Errorf("preStop sleep %d", s)
				}
				if g := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 50 {
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
			name: "the admission policies name the release's doorman ServiceAccount",
			args: []string{"--namespace", "elsewhere"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				for _, p := range objs.ofKind("ValidatingAdmissionPolicy") {
					conds, _, _ := unstructured.NestedSlice(p.Object, "spec", "matchConditions")
					expr := conds[0].(map[string]any)["expression"].(string)
					if !strings.Contains(expr, `"system:serviceaccount:elsewhere:napwake-doorman"`) {
						t.Errorf("%s matches %q, want the doorman in namespace elsewhere", p.GetName(), expr)
					}
				}
			},
		},
		{
			name: "pod placement values reach both Deployments",
			args: []string{"--set", "operator.nodeSelector.pool=system", "--set", "doorman.nodeSelector.pool=edge",
				"--set", "doorman.priorityClassName=system-cluster-critical", "--set-json", `doorman.tolerations=[{"key":"edge","operator":"Exists"}]`,
				"--set-json", `imagePullSecrets=[{"name":"regcred"}]`, "--set", "doorman.podAnnotations.a=b"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				op, dm := objs.deployment(t, operatorName).Spec.Template, objs.deployment(t, doormanName).Spec.Template
				if op.Spec.NodeSelector["pool"] != "system" || dm.Spec.NodeSelector["pool"] != "edge" {
					t.Errorf("node selectors %v / %v", op.Spec.NodeSelector, dm.Spec.NodeSelector)
				}
				if dm.Spec.PriorityClassName != "system-cluster-critical" || op.Spec.PriorityClassName != "" {
					t.Errorf("priority classes %q / %q", op.Spec.PriorityClassName, dm.Spec.PriorityClassName)
				}
				if len(dm.Spec.Tolerations) != 1 || dm.Spec.Tolerations[0].Key != "edge" || len(op.Spec.Tolerations) != 0 {
					t.Errorf("tolerations %v / %v", op.Spec.Tolerations, dm.Spec.Tolerations)
				}
				for _, s := range [][]corev1.LocalObjectReference{op.Spec.ImagePullSecrets, dm.Spec.ImagePullSecrets} {
					if len(s) != 1 || s[0].Name != "regcred" {
						t.Errorf("pull secrets %v", s)
					}
				}
				if dm.Annotations["a"] != "b" {
					t.Errorf("pod annotations %v", dm.Annotations)
				}
			},
		},
		{
			name: "operator replicas, resources, affinity and pod annotations reach the operator only",
			args: []string{"--set", "operator.replicas=2", "--set", "operator.resources.limits.memory=1Gi", "--set", "operator.podAnnotations.x=y",
				"--set-json", `operator.affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["system"]}]}]}}}`,
				"--set", "doorman.resources.requests.cpu=250m"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				op, dm := objs.deployment(t, operatorName), objs.deployment(t, doormanName)
				if *op.Spec.Replicas != 2 {
					t.Errorf("operator replicas %d", *op.Spec.Replicas)
				}
				if got := quantity(container(t, op).Resources.Limits, corev1.ResourceMemory); got != "1Gi" {
					t.Errorf("operator memory limit %s", got)
				}
				if got := quantity(container(t, dm).Resources.Requests, corev1.ResourceCPU); got != "250m" {
					t.Errorf("doorman cpu request %s", got)
				}
				if got := quantity(container(t, dm).Resources.Limits, corev1.ResourceMemory); got != "512Mi" {
					t.Errorf("doorman memory limit %s, want the default kept", got)
				}
				if op.Spec.Template.Annotations["x"] != "y" || dm.Spec.Template.Annotations["x"] != "" {
					t.Errorf("pod annotations %v / %v", op.Spec.Template.Annotations, dm.Spec.Template.Annotations)
				}
				if op.Spec.Template.Spec.Affinity == nil || dm.Spec.Template.Spec.Affinity != nil {
					t.Errorf("affinity %+v / %+v", op.Spec.Template.Spec.Affinity, dm.Spec.Template.Spec.Affinity)
				}
			},
		},
		{
			name: "the alerts' durations and the rule's labels follow their values",
			args: []string{"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.prometheusRule.labels.role=alert-rules",
				"--set", "monitoring.prometheusRule.wakesFailingFor=15m", "--set", "monitoring.prometheusRule.unavailableFor=2m"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				if objs.find("ServiceMonitor", release) != nil {
					t.Error("ServiceMonitor rendered while off")
				}
				rule := objs.get(t, "PrometheusRule", release)
				if rule.GetLabels()["role"] != "alert-rules" {
					t.Errorf("labels %v", rule.GetLabels())
				}
				groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
				fors := map[string]any{}
				for _, r := range groups[0].(map[string]any)["rules"].([]any) {
					r := r.(map[string]any)
					fors[r["alert"].(string)] = r["for"]
				}
				if fors["NapwakeDoormanWakesFailing"] != "15m" || fors["NapwakeDoormanUnavailable"] != "2m" {
					t.Errorf("for %v", fors)
				}
			},
		},
		{
			name: "commonLabels land on every object",
			args: []string{"--set", "commonLabels.team=platform"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				for _, u := range objs {
					if u.GetLabels()["team"] != "platform" {
						t.Errorf("%s/%s lacks the common label", u.GetKind(), u.GetName())
					}
				}
			},
		},
		{
			name: "networkPolicy without ingressFrom leaves the routing ports open and the metrics port to metrics: enabled",
			args: []string{"--set", "networkPolicy.enabled=true"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				np := callersPolicy(t, objs)
				if len(np.Spec.Ingress) != 2 {
					t.Fatalf("ingress rules %+v, want routing and metrics", np.Spec.Ingress)
				}
				routing, metrics := np.Spec.Ingress[0], np.Spec.Ingress[1]
				if len(routing.From) != 0 {
					t.Errorf("routing ports restricted to %+v with no ingressFrom", routing.From)
				}
				wantRoutingPorts(t, routing)
				if len(metrics.Ports) != 1 || metrics.Ports[0].Port.IntValue() != 8443 ||
					len(metrics.From) != 1 || metrics.From[0].NamespaceSelector.MatchLabels["metrics"] != "enabled" {
					t.Errorf("metrics rule %+v, want 8443 from namespaces labelled metrics: enabled", metrics)
				}
				if objs.find("NetworkPolicy", doormanName+"-egress") != nil {
					t.Error("egress policy rendered without doorman.networkPolicy.egress.enabled")
				}
			},
		},
		{
			name: "ingressFrom peers and the operator may reach the routing ports",
			args: []string{"--set", "networkPolicy.enabled=true", "-f", "testdata/ingress-from.yaml"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				np := callersPolicy(t, objs)
				routing := np.Spec.Ingress[0]
				wantRoutingPorts(t, routing)
				if len(routing.From) != 3 {
					t.Fatalf("routing peers %+v, want ingress-nginx, team checkout, the operator", routing.From)
				}
				if routing.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "ingress-nginx" ||
					routing.From[1].NamespaceSelector.MatchLabels["team"] != "checkout" {
					t.Errorf("ingressFrom peers %+v", routing.From[:2])
				}
				if op := routing.From[2]; op.NamespaceSelector != nil || op.PodSelector.MatchLabels["control-plane"] != "controller-manager" {
					t.Errorf("operator peer %+v", op)
				}
			},
		},
		{
			name: "the egress policy allows the pod CIDRs and the API server on its ports only",
			args: []string{"--set", "doorman.networkPolicy.egress.enabled=true", "--set", "doorman.networkPolicy.egress.podCIDRs={10.244.0.0/16,fd00:10:244::/56}",
				"--set", "doorman.networkPolicy.egress.apiServer={172.18.0.2/32}", "--set", "doorman.networkPolicy.egress.apiServerPorts={6443}"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				var np networkingv1.NetworkPolicy
				into(t, objs.get(t, "NetworkPolicy", doormanName+"-egress"), &np)
				if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) || np.Spec.PodSelector.MatchLabels["control-plane"] != "doorman" {
					t.Errorf("policy %+v", np.Spec)
				}
				if len(np.Spec.Egress) != 2 {
					t.Fatalf("egress %+v", np.Spec.Egress)
				}
				pods, api := np.Spec.Egress[0], np.Spec.Egress[1]
				if len(pods.To) != 2 || pods.To[0].IPBlock.CIDR != "10.244.0.0/16" || pods.To[1].IPBlock.CIDR != "fd00:10:244::/56" || len(pods.Ports) != 0 {
					t.Errorf("pod rule %+v", pods)
				}
				if len(api.To) != 1 || api.To[0].IPBlock.CIDR != "172.18.0.2/32" || len(api.Ports) != 1 || api.Ports[0].Port.IntValue() != 6443 {
					t.Errorf("API server rule %+v", api)
				}
			},
		},
		{
			name: "podsTo adds selector peers to the egress policy's pod rule, for CNIs that ignore ipBlock for pods",
			args: []string{"--set", "doorman.networkPolicy.egress.enabled=true", "--set", "doorman.networkPolicy.egress.apiServer={172.18.0.2/32}",
				"--set-json", `doorman.networkPolicy.egress.podsTo=[{"namespaceSelector":{}}]`},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				var np networkingv1.NetworkPolicy
				into(t, objs.get(t, "NetworkPolicy", doormanName+"-egress"), &np)
				pods := np.Spec.Egress[0]
				if len(pods.To) != 1 || pods.To[0].IPBlock != nil || pods.To[0].NamespaceSelector == nil || len(pods.To[0].NamespaceSelector.MatchLabels) != 0 || pods.To[0].PodSelector != nil {
					t.Errorf("pod rule %+v, want one peer: every namespace's pods", pods)
				}
			},
		},
		{
			name: "monitoring renders a ServiceMonitor over both metrics Services and the two alerts",
			args: []string{"--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.prometheusRule.enabled=true",
				"--set", "monitoring.serviceMonitor.labels.release=prom", "--set", "monitoring.serviceMonitor.interval=15s"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				sm := objs.get(t, "ServiceMonitor", release)
				if sm.GetLabels()["release"] != "prom" {
					t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
				}
				eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || eps[0].(map[string]any)["interval"] != "15s" {
					t.Errorf("endpoints %v", eps)
				}
				// Its selector takes the two metrics Services, not the headless one.
				sel, _, _ := unstructured.NestedSlice(sm.Object, "spec", "selector", "matchExpressions")
				for _, svc := range objs.ofKind("Service") {
					matched := matchesExpressions(svc.GetLabels(), sel)
					if want := svc.GetName() != doormanPods; matched != want {
						t.Errorf("ServiceMonitor selects Service %s: %v, want %v", svc.GetName(), matched, want)
					}
				}
				rules := alerts(t, objs.get(t, "PrometheusRule", release))
				if expr := rules["NapwakeDoormanWakesFailing"]; !strings.Contains(expr, `napwake_doorman_wakes_total{namespace="napwake-system", result=~"failed|timed_out"}`) {
					t.Errorf("NapwakeDoormanWakesFailing expr %q", expr)
				}
				if expr := rules["NapwakeDoormanUnavailable"]; !strings.Contains(expr, `absent(up{namespace="napwake-system", job="napwake-doorman"} == 1)`) {
					t.Errorf("NapwakeDoormanUnavailable expr %q", expr)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, render(t, tc.args...))
		})
	}
}

// quantity returns one resource of a list as a string ("" without it).
func quantity(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return ""
	}
	return q.String()
}

func callersPolicy(t *testing.T, objs objects) networkingv1.NetworkPolicy {
	t.Helper()
	var np networkingv1.NetworkPolicy
	into(t, objs.get(t, "NetworkPolicy", doormanName+"-callers"), &np)
	if np.Spec.PodSelector.MatchLabels["control-plane"] != "doorman" ||
		!slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policy applies to %+v types %v, want the doorman's pods, Ingress", np.Spec.PodSelector, np.Spec.PolicyTypes)
	}
	return np
}

func wantRoutingPorts(t *testing.T, rule networkingv1.NetworkPolicyIngressRule) {
	t.Helper()
	if len(rule.Ports) != 1 || rule.Ports[0].Port.IntValue() != 20000 || *rule.Ports[0].EndPort != 29999 || *rule.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("routing rule ports %+v, want TCP 20000-29999", rule.Ports)
	}
}

// matchesExpressions evaluates In expressions (all the ServiceMonitor uses).
func matchesExpressions(labels map[string]string, exprs []any) bool {
	for _, e := range exprs {
		m := e.(map[string]any)
		v, ok := labels[m["key"].(string)]
		if !ok || m["operator"] != "In" || !slices.Contains(m["values"].([]any), any(v)) {
			return false
		}
	}
	return true
}

func alerts(t *testing.T, rule *unstructured.Unstructured) map[string]string {
	t.Helper()
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	out := map[string]string{}
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			out[r["alert"].(string)] = r["expr"].(string)
		}
	}
	if len(out) != 2 {
		t.Errorf("alerts %v, want NapwakeDoormanWakesFailing and NapwakeDoormanUnavailable", out)
	}
	return out
}

// TestBadValuesAreRefusedClearly: the schema and the templates' checks
// refuse values that would install something broken, naming the value.
func TestBadValuesAreRefusedClearly(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string // all in helm's message
	}{
		{"a wake setting other than request or ask", []string{"--set", "defaults.wake=always"}, []string{"defaults/wake", "request", "ask"}},
		{"an idleAfter that is no Go duration", []string{"--set", "defaults.idleAfter=30 minutes"}, []string{"defaults/idleAfter"}},
		{"a malformed digest", []string{"--set", "doorman.image.digest=sha256:abc"}, []string{"doorman/image/digest"}},
		{"a tag with a colon", []string{"--set", "operator.image.tag=a:b"}, []string{"operator/image/tag"}},
		{"an unknown value (a typo)", []string{"--set", "doorman.healthCheckUserAgent=x"}, []string{"healthCheckUserAgent"}},
		{"a port cap of zero", []string{"--set", "doorman.portsPerWorkload=0"}, []string{"doorman/portsPerWorkload"}},
		{"a socket buffer too small to carry anything", []string{"--set", "doorman.passSocketBufferBytes=100"}, []string{"doorman/passSocketBufferBytes"}},
		{"a user agent with a comma", []string{"--set-json", `doorman.healthCheckUserAgents=["a,b"]`}, []string{"doorman/healthCheckUserAgents/0"}},
		{"a pull policy of the wrong case", []string{"--set", "operator.image.pullPolicy=ifnotpresent"}, []string{"operator/image/pullPolicy"}},
		{"an ingressFrom peer that is no peer", []string{"--set", "networkPolicy.enabled=true", "--set-json", `doorman.networkPolicy.ingressFrom=[{"namespace":"x"}]`}, []string{"doorman/networkPolicy/ingressFrom/0"}},
		{"a pod CIDR that is no CIDR", []string{"--set", "doorman.networkPolicy.egress.podCIDRs={10.0.0.0}"}, []string{"doorman/networkPolicy/egress/podCIDRs/0"}},
		{
			"ingressFrom without networkPolicy.enabled, which would leave the doorman open",
			[]string{"-f", "testdata/ingress-from.yaml"},
			[]string{"doorman.networkPolicy.ingressFrom is set but networkPolicy.enabled is false", "leave the doorman's routing ports open"},
		},
		{
			"an egress policy without pod CIDRs or selectors",
			[]string{"--set", "doorman.networkPolicy.egress.enabled=true", "--set", "doorman.networkPolicy.egress.apiServer={10.0.0.1/32}"},
			[]string{"doorman.networkPolicy.egress.podCIDRs", "doorman.networkPolicy.egress.podsTo"},
		},
		{
			"an egress policy without the API server",
			[]string{"--set", "doorman.networkPolicy.egress.enabled=true", "--set", "doorman.networkPolicy.egress.podCIDRs={10.244.0.0/16}"},
			[]string{"doorman.networkPolicy.egress.apiServer"},
		},
		{
			"a grace period shorter than the preStop sleep and the doorman's 40 s",
			[]string{"--set", "doorman.preStopSleepSeconds=10", "--set", "doorman.terminationGracePeriodSeconds=45"},
			[]string{"doorman.terminationGracePeriodSeconds (45) must be at least doorman.preStopSleepSeconds + 40 (50)"},
		},
		{"the NEG forwarder, not built yet", []string{"--set", "doorman.negForwarder.enabled=true"}, []string{"doorman.negForwarder.enabled: the NEG forwarder is not built yet"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := renderError(t, tc.args...)
			for _, want := range tc.want {
				if !strings.Contains(msg, want) {
					t.Errorf("message does not name %q:\n%s", want, msg)
				}
			}
		})
	}
}

func TestTheChartLintsStrictly(t *testing.T) {
	for _, values := range [][]string{nil, everythingOn} {
		out, err := runHelm(append([]string{"lint", "--strict", chartDir(t), "--namespace", namespace}, values...)...)
		if err != nil {
			t.Fatalf("helm lint --strict %v: %v\n%s", values, err, out)
		}
	}
}
