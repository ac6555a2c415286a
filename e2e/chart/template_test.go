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
	chartAppVer   = "v0.1.0"
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

// operatorGrantsOnDeployments says whether the operator's rendered
// ClusterRole grants verb on Deployments.
func operatorGrantsOnDeployments(t testing.TB, objs objects, verb string) bool {
	t.Helper()
	var cr rbacv1.ClusterRole
	into(t, objs.get(t, "ClusterRole", operatorName), &cr)
	for _, r := range cr.Rules {
		if slices.Contains(r.APIGroups, "apps") && slices.Contains(r.Resources, "deployments") && slices.Contains(r.Verbs, verb) {
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
		{"PodDisruptionBudget", doormanName}, {"Secret", wakeKeySecret},
		{"ClusterRole", doormanName}, {"ClusterRoleBinding", doormanName},
		{"Role", doormanName + "-wake-key"}, {"RoleBinding", doormanName + "-wake-key"},
		{"ValidatingAdmissionPolicy", doormanName + "-changes-only-wake-annotations"},
		{"ValidatingAdmissionPolicyBinding", doormanName + "-changes-only-wake-annotations"},
		{"ValidatingAdmissionPolicy", doormanName + "-only-sets-last-request"},
		{"ValidatingAdmissionPolicyBinding", doormanName + "-only-sets-last-request"},
		{"ValidatingAdmissionPolicy", operatorName + "-only-writes-status"},
		{"ValidatingAdmissionPolicyBinding", operatorName + "-only-writes-status"},
		{"ClusterRole", viewRole}, {"ClusterRole", editRole},
		{"CustomResourceDefinition", crdName},
		{"Job", operatorName + "-restore"}, // the uninstall hook
	} {
		objs.get(t, want.kind, want.name)
	}
	for _, off := range []string{"NetworkPolicy", "ServiceMonitor", "PrometheusRule"} {
		if got := objs.ofKind(off); len(got) != 0 {
			t.Errorf("%s rendered by default: %s", off, got)
		}
	}
	if got := len(objs); got != 27 {
		t.Errorf("rendered %d objects, want the 27 above: %s", got, objs)
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
	wantNoFlag(t, c, "prometheus-http-config")
	if len(c.Env) != 2 || c.Env[0].Name != "POD_NAME" || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" ||
		c.Env[1].Name != "POD_NAMESPACE" || c.Env[1].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("env %+v, want POD_NAME from metadata.name and POD_NAMESPACE from metadata.namespace", c.Env)
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
	wantFlag(t, c, "wake-key-secret", wakeKeySecret)
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
	// The doorman exits at most 43 s after SIGTERM (doorman/main.go's
	// stopsWithin: 15 s of service, 25 s for open connections, 3 s of
	// bookkeeping); the grace period holds the preStop sleep, that and a
	// margin of 7 s (at least 5 s is enforced, below).
	const doormanStopsWithin, margin = 43, 7
	if got := *spec.TerminationGracePeriodSeconds; got != 5+doormanStopsWithin+margin {
		t.Errorf("terminationGracePeriodSeconds %d, want %d (5 s preStop sleep + %d s shutdown + a %d s margin)", got, 5+doormanStopsWithin+margin, doormanStopsWithin, margin)
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

	var secret corev1.Secret
	into(t, objs.get(t, "Secret", wakeKeySecret), &secret)
	if len(secret.Data) != 0 || len(secret.StringData) != 0 {
		t.Errorf("wake key Secret renders data %v/%v: Helm must never set it", secret.Data, secret.StringData)
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

// valueCase is one value (or a few that belong together) and a check of
// its effect on the rendered objects.
type valueCase struct {
	name  string
	args  []string
	check func(t *testing.T, objs objects)
}

// TestEachValueReachesItsObject sets one value (or a few that belong
// together) and checks its effect on the rendered objects.
func TestEachValueReachesItsObject(t *testing.T) {
	for _, tc := range slices.Concat(componentValueCases(), placementPolicyAndMonitoringCases(), podKnobCases()) {
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
	if len(out) != len(allAlerts) {
		t.Errorf("alerts %v, want %q", out, allAlerts)
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
		{"a Prometheus http config without a Prometheus URL", []string{"--set", "operator.prometheusHTTPConfig.secretName=mimir-query"}, []string{"operator.prometheusHTTPConfig.secretName needs operator.prometheusURL"}},
		{"a misspelled Prometheus http config value", []string{"--set", "operator.prometheusHTTPConfig.secret=mimir-query"}, []string{"operator/prometheusHTTPConfig", "secret"}},
		{"a Prometheus http config key with a slash", []string{"--set", "operator.prometheusURL=http://p:9090", "--set", "operator.prometheusHTTPConfig.key=../http.yaml"}, []string{"operator/prometheusHTTPConfig/key"}},
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
			"a grace period without 5 s over the preStop sleep and the doorman's 43 s",
			[]string{"--set", "doorman.preStopSleepSeconds=10", "--set", "doorman.terminationGracePeriodSeconds=57"},
			[]string{"doorman.terminationGracePeriodSeconds (57) must be at least doorman.preStopSleepSeconds + 48 (58)"},
		},
		{"the NEG forwarder without the doorman", []string{"--set", "doorman.negForwarder.enabled=true", "--set", "doorman.enabled=false"}, []string{"doorman.negForwarder.enabled needs doorman.enabled"}},
		{"forwarder replicas out of range", []string{"--set", "doorman.negForwarder.replicas=0"}, []string{"doorman.negForwarder.replicas"}},
		// A misspelled key in each object the pod knobs added is refused by name.
		{"a misspelled ServiceAccount key", []string{"--set", "operator.serviceAccount.annotation.a=b"}, []string{"operator/serviceAccount", "annotation"}},
		{"a misspelled pod security context field", []string{"--set", "operator.podSecurityContext.runAsUsr=1000"}, []string{"operator/podSecurityContext", "runAsUsr"}},
		{"a misspelled container security context field", []string{"--set", "doorman.securityContext.readOnlyRootFileSystem=false"}, []string{"doorman/securityContext", "readOnlyRootFileSystem"}},
		{"a misspelled capabilities field", []string{"--set", "doorman.securityContext.capabilities.dropped={ALL}"}, []string{"doorman/securityContext/capabilities", "dropped"}},
		{"a misspelled extraEnv field", []string{"--set-json", `doorman.extraEnv=[{"name":"A","vaule":"b"}]`}, []string{"doorman/extraEnv/0", "vaule"}},
		{"an extraVolume without a name", []string{"--set-json", `operator.extraVolumes=[{"emptyDir":{}}]`}, []string{"operator/extraVolumes/0", "name"}},
		{"a misspelled extraVolumeMounts field", []string{"--set-json", `operator.extraVolumeMounts=[{"name":"a","mountpath":"/a"}]`}, []string{"operator/extraVolumeMounts/0", "mountpath"}},
		{"a misspelled topology spread field", []string{"--set-json", `doorman.topologySpreadConstraints=[{"maxSkew":1,"topologykey":"z","whenUnsatisfiable":"DoNotSchedule"}]`}, []string{"doorman/topologySpreadConstraints/0", "topologykey"}},
		{"a misspelled knob on a component", []string{"--set", "operator.extraEnvs[0].name=A"}, []string{"extraEnvs"}},
		{"an image registry with a tag", []string{"--set", "global.imageRegistry=registry.example/mirror:1.0"}, []string{"global/imageRegistry"}},
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
