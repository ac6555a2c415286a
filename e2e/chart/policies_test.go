package chart

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// placementPolicyAndMonitoringCases set where pods run, the labels on every
// object, the NetworkPolicies and the monitoring objects.
func placementPolicyAndMonitoringCases() []valueCase {
	return []valueCase{
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
				"--set", "monitoring.prometheusRule.wakesFailingFor=15m", "--set", "monitoring.prometheusRule.unavailableFor=2m",
				"--set", "monitoring.prometheusRule.operatorDownFor=3m", "--set", "monitoring.prometheusRule.stuckFor=1h",
				"--set", "monitoring.prometheusRule.turningAwayFor=20m"},
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
				for _, g := range groups {
					for _, r := range g.(map[string]any)["rules"].([]any) {
						r := r.(map[string]any)
						fors[r["alert"].(string)] = r["for"]
					}
				}
				want := map[string]any{"NapwakeDoormanWakesFailing": "15m", "NapwakeDoormanUnavailable": "2m", "NapwakeOperatorDown": "3m",
					"NapwakeWorkloadStuck": "1h", "NapwakeWorkloadTurningCallersAway": "20m"}
				if !reflect.DeepEqual(fors, want) {
					t.Errorf("for %v, want %v", fors, want)
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
			name: "monitoring renders a ServiceMonitor over both metrics Services, keeping the workloads' namespace, and the alerts",
			args: []string{"--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.prometheusRule.enabled=true",
				"--set", "monitoring.serviceMonitor.labels.release=prom", "--set", "monitoring.serviceMonitor.interval=15s"},
			check: func(t *testing.T, objs objects) {
				t.Helper()
				sm := objs.get(t, "ServiceMonitor", release)
				if sm.GetLabels()["release"] != "prom" {
					t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
				}
				eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || eps[0].(map[string]any)["interval"] != "15s" ||
					eps[0].(map[string]any)["honorLabels"] != true {
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
}
