package epslice

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

var (
	v4 = napwakev1alpha1.IPFamily(corev1.IPv4Protocol)
	v6 = napwakev1alpha1.IPFamily(corev1.IPv6Protocol)
)

func TestBuild(t *testing.T) {
	doormen := []Doorman{
		{IP: "10.0.0.2", Family: v4, PodName: "doorman-b", PodNS: "napwake-system", NodeName: "n2"},
		{IP: "10.0.0.1", Family: v4, PodName: "doorman-a", PodNS: "napwake-system", NodeName: "n1"},
		{IP: "fd00::1", Family: v6, PodName: "doorman-a", PodNS: "napwake-system"},
	}
	routes := []napwakev1alpha1.Route{
		{Service: "api", PortName: "http", Port: 80, DoormanPort: 20017, IPFamilies: []napwakev1alpha1.IPFamily{v4, v6}},
		{Service: "api", PortName: "grpc", Port: 9000, DoormanPort: 20018, IPFamilies: []napwakev1alpha1.IPFamily{v4, v6}},
		{Service: "legacy", PortName: "", Port: 8080, DoormanPort: 20019, IPFamilies: []napwakev1alpha1.IPFamily{v4}},
	}

	t.Run("one slice per IP family per Service, named, labelled and owned as docs/design/pause-wake.md says", func(t *testing.T) {
		got := BuildAll("preview-42", "api-mw", routes, map[string]types.UID{"api": "uid-1"}, doormen)
		names := []string{}
		for _, s := range got {
			names = append(names, s.Name)
		}
		want := []string{"api-napwake-ipv4", "api-napwake-ipv6", "legacy-napwake-ipv4"}
		if len(names) != len(want) {
			t.Fatalf("slices %v, want %v", names, want)
		}
		for i := range want {
			if names[i] != want[i] {
				t.Fatalf("slices %v, want %v", names, want)
			}
		}
		s := got[0]
		if s.Namespace != "preview-42" || s.AddressType != discoveryv1.AddressTypeIPv4 {
			t.Errorf("namespace %q address type %q", s.Namespace, s.AddressType)
		}
		if s.Labels["kubernetes.io/service-name"] != "api" || s.Labels["endpointslice.kubernetes.io/managed-by"] != "napwake.dev" || s.Labels["napwake.dev/workload"] != "api-mw" {
			t.Errorf("labels %v", s.Labels)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Service" || s.OwnerReferences[0].UID != "uid-1" {
			t.Errorf("owner %v", s.OwnerReferences)
		}
		if len(got[2].OwnerReferences) != 0 {
			t.Errorf("a Service of unknown UID gets no owner, got %v", got[2].OwnerReferences)
		}
	})

	t.Run("endpoints are the Ready doorman addresses of the slice's family, sorted", func(t *testing.T) {
		got := BuildAll("ns", "w", routes, nil, doormen)
		e4, e6 := got[0].Endpoints, got[1].Endpoints
		if len(e4) != 2 || e4[0].Addresses[0] != "10.0.0.1" || e4[1].Addresses[0] != "10.0.0.2" {
			t.Fatalf("IPv4 endpoints %+v", e4)
		}
		if *e4[0].NodeName != "n1" || !*e4[0].Conditions.Ready {
			t.Errorf("endpoint %+v", e4[0])
		}
		if len(e6) != 1 || e6[0].Addresses[0] != "fd00::1" {
			t.Fatalf("IPv6 endpoints %+v", e6)
		}
	})

	t.Run("ports carry the Service port's name and the doorman's port, TCP", func(t *testing.T) {
		got := BuildAll("ns", "w", routes, nil, doormen)
		p := got[0].Ports
		if len(p) != 2 || *p[0].Name != "http" || *p[0].Port != 20017 || *p[1].Name != "grpc" || *p[1].Port != 20018 || *p[0].Protocol != corev1.ProtocolTCP {
			t.Fatalf("ports %+v", p)
		}
		if lp := got[2].Ports; len(lp) != 1 || *lp[0].Name != "" || *lp[0].Port != 20019 {
			t.Fatalf("unnamed port %+v", lp)
		}
	})

	t.Run("no slice for a family no doorman pod has an address in", func(t *testing.T) {
		got := BuildAll("ns", "w", routes, nil, doormen[:2])
		if len(got) != 2 || got[0].Name != "api-napwake-ipv4" || got[1].Name != "legacy-napwake-ipv4" {
			t.Fatalf("got %d slices", len(got))
		}
	})

	t.Run("a slice needs an update only when what the operator writes differs", func(t *testing.T) {
		a := BuildAll("ns", "w", routes, nil, doormen)[0]
		b := a.DeepCopy()
		b.ResourceVersion = "7"
		b.Labels["team"] = "x"
		if NeedsUpdate(b, &a) {
			t.Error("same content: no update")
		}
		c := BuildAll("ns", "w", routes, nil, doormen[1:])[0]
		if !NeedsUpdate(b, &c) {
			t.Error("other endpoints: update")
		}
		Apply(b, &c)
		if NeedsUpdate(b, &c) || b.ResourceVersion != "7" || b.Labels["team"] != "x" {
			t.Errorf("Apply lost metadata or content: %+v", b)
		}
	})

	t.Run("a slice of the name written by someone else is not ours", func(t *testing.T) {
		s := BuildAll("ns", "w", routes, nil, doormen)[0]
		if !Ours(&s, "w") || Ours(&s, "other") {
			t.Error("ours by workload label")
		}
		s.Labels["endpointslice.kubernetes.io/managed-by"] = "someone"
		if Ours(&s, "w") {
			t.Error("another manager's slice is not ours")
		}
	})
}
