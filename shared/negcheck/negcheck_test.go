package negcheck

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const ns = "preview-42"

// good is a forwarded slice GKE's NEG controller takes, with what it
// refers to: Service api, forwarder pod fwd-a on node n1, dual-stack.
func good() ([]discoveryv1.EndpointSlice, Objects) {
	endpoint := func(ip string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To("n1"),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "fwd-a", UID: "uid-a"},
		}
	}
	slice := func(name string, t discoveryv1.AddressType, ip string) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
				discoveryv1.LabelServiceName: "api", discoveryv1.LabelManagedBy: "napwake.dev", LabelForwarded: "true"}},
			AddressType: t,
			Endpoints:   []discoveryv1.Endpoint{endpoint(ip)},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
	}
	return []discoveryv1.EndpointSlice{
			slice("api-napwake-ipv4", discoveryv1.AddressTypeIPv4, "10.2.0.1"),
			slice("api-napwake-ipv6", discoveryv1.AddressTypeIPv6, "fd00:2::1"),
		}, Objects{
			Services: []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}},
			Pods: []corev1.Pod{{
				ObjectMeta: metav1.ObjectMeta{Name: "fwd-a", Namespace: ns, UID: "uid-a"},
				Spec:       corev1.PodSpec{NodeName: "n1"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.2.0.1", PodIPs: []corev1.PodIP{{IP: "10.2.0.1"}, {IP: "fd00:2::1"}},
					Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
			}},
			Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{PodCIDRs: []string{"10.2.0.0/24", "fd00:2::/64"}}}},
		}
}

func TestAForwardedSliceGKETakesPasses(t *testing.T) {
	s, objs := good()
	if got := Check(s, objs); len(got) != 0 {
		t.Fatalf("problems %v, want none", got)
	}
}

// TestEachRuleBrokenOnceIsFoundAndNothingElse breaks each rule once and
// expects exactly that rule reported, checking the IPv4 slice.
func TestEachRuleBrokenOnceIsFoundAndNothingElse(t *testing.T) {
	cases := []struct {
		name   string
		rule   Rule
		mutate func(s []discoveryv1.EndpointSlice, o *Objects)
	}{
		{"the service-name label names no Service", ServiceName, func(s []discoveryv1.EndpointSlice, _ *Objects) {
			s[0].Labels[discoveryv1.LabelServiceName] = "web"
		}},
		{"an endpoint without nodeName", NodeName, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).NodeName = nil }},
		{"an endpoint with an empty nodeName", NodeName, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).NodeName = ptr.To("") }},
		{"an endpoint without targetRef", TargetRef, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).TargetRef = nil }},
		{"a targetRef of another kind", TargetRefPod, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).TargetRef.Kind = "Service" }},
		{"a targetRef without uid", TargetRefPod, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).TargetRef.UID = "" }},
		{"a targetRef to a Pod that does not exist", PodExists, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).TargetRef.Name = "fwd-gone" }},
		{"a targetRef to a Pod of that name but another uid", PodExists, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).TargetRef.UID = "uid-old" }},
		{"an address that is not the Pod's", PodIP, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).Addresses = []string{"10.2.0.9"} }},
		{"the Pod's address and another", PodIP, func(s []discoveryv1.EndpointSlice, _ *Objects) {
			ep0(s).Addresses = append(ep0(s).Addresses, "10.2.0.9")
		}},
		{"a Pod in a terminal phase", PodNotTerminal, func(_ []discoveryv1.EndpointSlice, o *Objects) { o.Pods[0].Status.Phase = corev1.PodFailed }},
		{"a nodeName other than the Pod's node", NodeMatches, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).NodeName = ptr.To("n2") }},
		{"a Pod whose node is unknown", NodeExists, func(_ []discoveryv1.EndpointSlice, o *Objects) { o.Nodes = nil }},
		{"an address outside the node's podCIDRs", PodCIDR, func(_ []discoveryv1.EndpointSlice, o *Objects) {
			o.Nodes[0].Spec.PodCIDRs = []string{"10.3.0.0/24", "fd00:2::/64"}
		}},
		{"a slice managed by the EndpointSlice controller", SelectorSkipped, func(s []discoveryv1.EndpointSlice, _ *Objects) {
			s[0].Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
		}},
		{"a port named unlike the Service's", PortNames, func(s []discoveryv1.EndpointSlice, _ *Objects) { s[0].Ports[0].Name = ptr.To("grpc") }},
		{"a port without a name", PortNames, func(s []discoveryv1.EndpointSlice, _ *Objects) { s[0].Ports[0].Name = nil }},
		{"a Pod not Ready", PodReady, func(_ []discoveryv1.EndpointSlice, o *Objects) {
			o.Pods[0].Status.Conditions[0].Status = corev1.ConditionFalse
		}},
		{"a terminating Pod", PodReady, func(_ []discoveryv1.EndpointSlice, o *Objects) { o.Pods[0].DeletionTimestamp = &metav1.Time{} }},
		{"an endpoint that says terminating", PodReady, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).Conditions.Terminating = ptr.To(true) }},
		{"an endpoint with serving unset", PodReady, func(s []discoveryv1.EndpointSlice, _ *Objects) { ep0(s).Conditions.Serving = nil }},
	}
	covered := map[Rule]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, objs := good()
			c.mutate(s, &objs)
			got := Check(s[:1], objs)
			var rules []Rule
			for _, p := range got {
				rules = append(rules, p.Rule)
			}
			if !slices.Equal(rules, []Rule{c.rule}) {
				t.Fatalf("rules broken %v (%v), want exactly %s", rules, got, c.rule)
			}
		})
		covered[c.rule] = true
	}
	for _, r := range []Rule{ServiceName, NodeName, TargetRef, TargetRefPod, PodExists, PodIP, PodNotTerminal, NodeMatches, NodeExists, PodCIDR, SelectorSkipped, PortNames, PodReady} {
		if !covered[r] {
			t.Errorf("rule %s is never broken here", r)
		}
	}
}

// TestTheDoormansOwnSliceShapeFailsGKE: a slice as the doorman's own are
// (the doorman pods' addresses, no targetRef) is what GKE skips.
func TestTheDoormansOwnSliceShapeFailsGKE(t *testing.T) {
	s, objs := good()
	e := ep0(s)
	e.TargetRef, e.Addresses = nil, []string{"10.1.0.1"}
	got := Check(s[:1], objs)
	if len(got) != 1 || got[0].Rule != TargetRef {
		t.Fatalf("problems %v, want TargetRef only", got)
	}
}

func ep0(s []discoveryv1.EndpointSlice) *discoveryv1.Endpoint { return &s[0].Endpoints[0] }
