package kube

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/addr"
)

const ns = "preview-42"

func pod(name, uid string, ips ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(uid)}}
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	return p
}

func ep(ip, podName string, ready *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: podName}}
}

// serviceOwner is the owner reference the EndpointSlice controller sets.
func serviceOwner(service string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: service, UID: "svc-uid-" + types.UID(service),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
}

func slice(family discoveryv1.AddressType, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "api-x", Namespace: ns, Labels: map[string]string{
			napwakev1alpha1.LabelServiceName: "api", napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceControllerManager},
			OwnerReferences: serviceOwner("api")},
		AddressType: family,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   eps,
	}
}

func TestFilterEndpoints(t *testing.T) {
	pods := map[string]*corev1.Pod{
		"api-1":  pod("api-1", "u1", "10.244.1.5", "fd00:10::5"),
		"api-2":  pod("api-2", "u2", "10.244.1.6"),
		"meta":   pod("meta", "u3", "169.254.169.254"),
		"mapped": pod("mapped", "u4", "::ffff:127.0.0.1"),
		"self":   pod("self", "u5", "10.0.0.7"),
		"lo":     pod("lo", "u6", "127.0.0.1"),
	}
	lookup := func(name string) *corev1.Pod { return pods[name] }
	rules := addr.Rules{Self: []netip.Addr{netip.MustParseAddr("10.0.0.7")}}
	yes, no := ptr.To(true), ptr.To(false)
	want := func(s ...string) []netip.AddrPort {
		var out []netip.AddrPort
		for _, a := range s {
			out = append(out, netip.MustParseAddrPort(a))
		}
		return out
	}
	mod := func(s *discoveryv1.EndpointSlice, f func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
		f(s)
		return s
	}
	cases := []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		port   string
		want   []netip.AddrPort
	}{
		{"a Ready Pod endpoint is dialled on the named port", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes))}, "http", want("10.244.1.5:8080")},
		{"IPv6 slices work too", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv6, ep("fd00:10::5", "api-1", yes))}, "http", want("[fd00:10::5]:8080")},
		{"ready unset is not Ready", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", nil))}, "http", nil},
		{"ready false is not Ready", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", no))}, "http", nil},
		{"terminating is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, func() discoveryv1.Endpoint {
			e := ep("10.244.1.5", "api-1", yes)
			e.Conditions.Terminating = yes
			return e
		}())}, "http", nil},
		{"serving without ready is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, func() discoveryv1.Endpoint {
			e := ep("10.244.1.5", "api-1", nil)
			e.Conditions.Serving = yes
			return e
		}())}, "http", nil},
		{"another port name is not used", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes))}, "metrics", nil},
		{"an address not in the Pod's podIPs is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("10.244.9.9", "api-1", yes))}, "http", nil},
		{"another Pod's address is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.6", "api-1", yes))}, "http", nil},
		{"an endpoint without a targetRef is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, func() discoveryv1.Endpoint {
			e := ep("10.244.1.5", "api-1", yes)
			e.TargetRef = nil
			return e
		}())}, "http", nil},
		{"a Node targetRef is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, func() discoveryv1.Endpoint {
			e := ep("10.244.1.5", "api-1", yes)
			e.TargetRef.Kind = "Node"
			return e
		}())}, "http", nil},
		{"a targetRef in another namespace is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, func() discoveryv1.Endpoint {
			e := ep("10.244.1.5", "api-1", yes)
			e.TargetRef.Namespace = "kube-system"
			return e
		}())}, "http", nil},
		{"a targetRef with another UID is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, func() discoveryv1.Endpoint {
			e := ep("10.244.1.5", "api-1", yes)
			e.TargetRef.UID = "other"
			return e
		}())}, "http", nil},
		{"a missing Pod is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "gone", yes))}, "http", nil},
		{"a slice managed by someone else is refused", []*discoveryv1.EndpointSlice{mod(slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes)), func(s *discoveryv1.EndpointSlice) {
			s.Labels[napwakev1alpha1.LabelEndpointSliceManagedBy] = napwakev1alpha1.EndpointSliceManager
		})}, "http", nil},
		{"a slice managed by nobody is refused", []*discoveryv1.EndpointSlice{mod(slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes)), func(s *discoveryv1.EndpointSlice) {
			delete(s.Labels, napwakev1alpha1.LabelEndpointSliceManagedBy)
		})}, "http", nil},
		{"another Service's slice is refused", []*discoveryv1.EndpointSlice{mod(slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes)), func(s *discoveryv1.EndpointSlice) {
			s.Labels[napwakev1alpha1.LabelServiceName] = "other"
		})}, "http", nil},
		{"a slice with the controller's label but no owner is refused", []*discoveryv1.EndpointSlice{mod(slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes)), func(s *discoveryv1.EndpointSlice) {
			s.OwnerReferences = nil
		})}, "http", nil},
		{"a slice whose controller is another Service is refused", []*discoveryv1.EndpointSlice{mod(slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes)), func(s *discoveryv1.EndpointSlice) {
			s.OwnerReferences = serviceOwner("other")
		})}, "http", nil},
		{"a slice whose controller is not a Service is refused", []*discoveryv1.EndpointSlice{mod(slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes)), func(s *discoveryv1.EndpointSlice) {
			s.OwnerReferences[0].Kind = "ConfigMap"
		})}, "http", nil},
		{"a slice owned by the Service but not as its controller is refused", []*discoveryv1.EndpointSlice{mod(slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes)), func(s *discoveryv1.EndpointSlice) {
			s.OwnerReferences[0].Controller = nil
		})}, "http", nil},
		{"an FQDN slice is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeFQDN, ep("10.244.1.5", "api-1", yes))}, "http", nil},
		{"a UDP port is refused", []*discoveryv1.EndpointSlice{mod(slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes)), func(s *discoveryv1.EndpointSlice) {
			s.Ports[0].Protocol = ptr.To(corev1.ProtocolUDP)
		})}, "http", nil},
		{"a metadata address is refused even as a Pod's", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("169.254.169.254", "meta", yes))}, "http", nil},
		{"a mapped loopback address is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv6, ep("::ffff:127.0.0.1", "mapped", yes))}, "http", nil},
		{"loopback is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("127.0.0.1", "lo", yes))}, "http", nil},
		{"the doorman's own address is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("10.0.0.7", "self", yes))}, "http", nil},
		{"an IPv6 address in an IPv4 slice is refused", []*discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, ep("fd00:10::5", "api-1", yes))}, "http", nil},
		{"duplicates are dropped and the order is stable", []*discoveryv1.EndpointSlice{
			slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.6", "api-2", yes), ep("10.244.1.5", "api-1", yes)),
			slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", yes)),
		}, "http", want("10.244.1.5:8080", "10.244.1.6:8080")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := FilterEndpoints(tc.slices, lookup, ns, "api", tc.port, rules)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			// The same, as the cache holds the slices: trimmed.
			trimmed := make([]*discoveryv1.EndpointSlice, len(tc.slices))
			for i, s := range tc.slices {
				o, err := trimEndpointSlice(s.DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				trimmed[i] = o.(*discoveryv1.EndpointSlice)
			}
			if got := FilterEndpoints(trimmed, lookup, ns, "api", tc.port, rules); !slices.Equal(got, tc.want) {
				t.Fatalf("trimmed as cached: got %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzFilterEndpoints: whatever a slice and Pod say, every address
// accepted passes the dial rules and is one of the named Pod's podIPs.
func FuzzFilterEndpoints(f *testing.F) {
	f.Add("10.244.1.5", "10.244.1.5", "Pod", "IPv4", true, "http", "http")
	f.Add("::ffff:169.254.169.254", "::ffff:169.254.169.254", "Pod", "IPv6", true, "http", "http")
	f.Add("127.0.0.1", "127.0.0.1", "Node", "IPv4", true, "", "")
	f.Add("fe80::1%eth0", "fe80::1%eth0", "Pod", "IPv6", true, "http", "http")
	f.Fuzz(func(t *testing.T, epIP, podIP, kind, family string, ready bool, slicePortName, routePortName string) {
		p := pod("p", "u", podIP)
		s := slice(discoveryv1.AddressType(family), discoveryv1.Endpoint{Addresses: []string{epIP},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}, TargetRef: &corev1.ObjectReference{Kind: kind, Name: "p"}})
		s.Ports[0].Name = &slicePortName
		rules := addr.Rules{}
		for _, ap := range FilterEndpoints([]*discoveryv1.EndpointSlice{s}, func(n string) *corev1.Pod {
			if n == "p" {
				return p
			}
			return nil
		}, ns, "api", routePortName, rules) {
			if err := rules.CheckAddrPort(ap); err != nil {
				t.Fatalf("accepted %v: %v", ap, err)
			}
			if !podHasIP(p, ap.Addr()) || !ready || kind != "Pod" {
				t.Fatalf("accepted %v which is not a Ready Pod's address", ap)
			}
		}
	})
}

func TestTurnedAwayAnnotationRoundTrips(t *testing.T) {
	at := metav1.Now().UTC().Truncate(1e9)
	got, n, ok := napwakev1alpha1.ParseTurnedAway(napwakev1alpha1.FormatTurnedAway(at, 312))
	if !ok || !got.Equal(at) || n != 312 {
		t.Fatalf("round trip: %v %d %v", got, n, ok)
	}
	for _, bad := range []string{"", "312", "2026-10-23T18:04:12Z", "2026-10-23T18:04:12Z/-1", "yesterday/3", "2026-10-23T18:04:12Z/x"} {
		if _, _, ok := napwakev1alpha1.ParseTurnedAway(bad); ok {
			t.Errorf("ParseTurnedAway(%q) accepted", bad)
		}
	}
}
