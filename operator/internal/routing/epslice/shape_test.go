package epslice

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// TestSliceShapeForIngressControllers checks each of the shape rules of
// docs/design/pause-wake.md#the-doormans-endpointslices on every endpoint
// and port of the slices Build writes.
func TestSliceShapeForIngressControllers(t *testing.T) {
	doormen := []Doorman{
		{IP: "10.0.0.1", Family: v4, PodName: "doorman-a", PodNS: "napwake-system", NodeName: "n1"},
		{IP: "10.0.0.2", Family: v4, PodName: "doorman-b", PodNS: "napwake-system"},
		{IP: "fd00::1", Family: v6, PodName: "doorman-a", PodNS: "napwake-system"},
	}
	routes := []napwakev1alpha1.Route{
		{Service: "api", PortName: "http", Port: 80, DoormanPort: 20017, IPFamilies: []napwakev1alpha1.IPFamily{v4, v6}},
		{Service: "api", PortName: "grpc", Port: 9000, DoormanPort: 20018, IPFamilies: []napwakev1alpha1.IPFamily{v4, v6}},
		{Service: "legacy", PortName: "", Port: 8080, DoormanPort: 20019, IPFamilies: []napwakev1alpha1.IPFamily{v4}},
	}
	slices := BuildAll("preview-42", "api", routes, nil, doormen)
	if len(slices) != 3 {
		t.Fatalf("got %d slices, want 3", len(slices))
	}
	checkRules(t, slices, func(s discoveryv1.EndpointSlice) []discoveryv1.Endpoint { return s.Endpoints }, []rule[discoveryv1.Endpoint]{
		{"every endpoint says ready: true explicitly", func(e discoveryv1.Endpoint) bool {
			return e.Conditions.Ready != nil && *e.Conditions.Ready
		}},
		{"every endpoint says serving: true explicitly (Traefik reads only serving)", func(e discoveryv1.Endpoint) bool {
			return e.Conditions.Serving != nil && *e.Conditions.Serving
		}},
		{"every endpoint says terminating: false explicitly", func(e discoveryv1.Endpoint) bool {
			return e.Conditions.Terminating != nil && !*e.Conditions.Terminating
		}},
		{"no endpoint carries a targetRef, though the doorman pods are known", func(e discoveryv1.Endpoint) bool {
			return e.TargetRef == nil
		}},
		{"every endpoint has exactly one address", func(e discoveryv1.Endpoint) bool {
			return len(e.Addresses) == 1
		}},
	})
	checkRules(t, slices, func(s discoveryv1.EndpointSlice) []discoveryv1.EndpointPort { return s.Ports }, []rule[discoveryv1.EndpointPort]{
		{"every port has a name (never nil)", func(p discoveryv1.EndpointPort) bool { return p.Name != nil }},
		{"every port says protocol: TCP", func(p discoveryv1.EndpointPort) bool {
			return p.Protocol != nil && *p.Protocol == corev1.ProtocolTCP
		}},
		{"every port has the doorman's port number", func(p discoveryv1.EndpointPort) bool {
			return p.Port != nil && *p.Port >= 20017 && *p.Port <= 20019
		}},
	})
	t.Run(`an unnamed Service port is written as name ""`, func(t *testing.T) {
		p := slices[2].Ports
		if slices[2].Name != "legacy-napwake-ipv4" || len(p) != 1 || p[0].Name == nil || *p[0].Name != "" {
			t.Fatalf("slice %s ports %+v", slices[2].Name, p)
		}
	})
	t.Run("a slice written before with a targetRef is rewritten without it", func(t *testing.T) {
		old := slices[0].DeepCopy()
		old.Endpoints[0].TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: "napwake-system", Name: "doorman-a"}
		if !NeedsUpdate(old, &slices[0]) {
			t.Fatal("a slice with a targetRef needs an update")
		}
		Apply(old, &slices[0])
		if old.Endpoints[0].TargetRef != nil {
			t.Errorf("after Apply: %+v", old.Endpoints[0])
		}
	})
}

// rule is one shape rule that every item (endpoint or port) must keep.
type rule[T any] struct {
	name string
	ok   func(T) bool
}

// checkRules runs each rule as a subtest over the items of every slice.
func checkRules[T any](t *testing.T, slices []discoveryv1.EndpointSlice, items func(discoveryv1.EndpointSlice) []T, rules []rule[T]) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			for _, s := range slices {
				for _, it := range items(s) {
					if !r.ok(it) {
						t.Errorf("slice %s: %+v", s.Name, it)
					}
				}
			}
		})
	}
}
