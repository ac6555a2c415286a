// Package epslice builds the EndpointSlices that lead a paused workload's
// Services to the doorman
// (docs/design/pause-wake.md#the-doormans-endpointslices): one per IP family per
// Service, named <service>-napwake-ipv4 / -ipv6, endpoints the Ready doorman
// pods' addresses of that family, ports named like the Service's ports with
// the doorman's port numbers. It is pure: no client.
package epslice

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Doorman is one address of a Ready doorman pod. PodName and PodNS name the
// pod for the operator's own bookkeeping; they are never written into a
// slice (see Endpoints).
type Doorman struct {
	IP       string
	Family   napwakev1alpha1.IPFamily
	PodName  string
	PodNS    string
	NodeName string
}

// Families returns the IP families the doorman addresses cover, IPv4 first.
func Families(ds []Doorman) []napwakev1alpha1.IPFamily {
	var v4, v6 bool
	for _, d := range ds {
		v4 = v4 || d.Family == napwakev1alpha1.IPFamily(corev1.IPv4Protocol)
		v6 = v6 || d.Family == napwakev1alpha1.IPFamily(corev1.IPv6Protocol)
	}
	var out []napwakev1alpha1.IPFamily
	if v4 {
		out = append(out, napwakev1alpha1.IPFamily(corev1.IPv4Protocol))
	}
	if v6 {
		out = append(out, napwakev1alpha1.IPFamily(corev1.IPv6Protocol))
	}
	return out
}

// Name is the slice's name for a Service and an IP family.
func Name(service string, family napwakev1alpha1.IPFamily) string {
	if family == napwakev1alpha1.IPFamily(corev1.IPv6Protocol) {
		return service + napwakev1alpha1.SliceSuffixIPv6
	}
	return service + napwakev1alpha1.SliceSuffixIPv4
}

// Labels are the labels on every slice the operator writes for a workload's
// Service.
func Labels(service, workload string) map[string]string {
	return map[string]string{
		napwakev1alpha1.LabelServiceName:            service,
		napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager,
		napwakev1alpha1.LabelWorkload:               workload,
	}
}

// Ours reports whether the operator wrote this slice for the workload; a
// slice of the doorman's name that isn't is never overwritten.
func Ours(s *discoveryv1.EndpointSlice, workload string) bool {
	return s.Labels[napwakev1alpha1.LabelEndpointSliceManagedBy] == napwakev1alpha1.EndpointSliceManager &&
		s.Labels[napwakev1alpha1.LabelWorkload] == workload
}

// Owner says whose an existing slice of the doorman's name is, to the
// workload about to write it.
type Owner int

const (
	// Mine: the operator wrote it for this workload; update it as needed.
	Mine Owner = iota
	// Sharer: the operator wrote it for another workload in the namespace,
	// which the same Service selects and which is paused too. It is left as
	// it is: that workload's route serves the Service for both.
	Sharer
	// Foreign: someone else's (another manager, or no workload label). It
	// is never overwritten.
	Foreign
)

// OwnerOf judges an existing slice s of the doorman's name for workload,
// and names the other workload when it is a Sharer.
func OwnerOf(s *discoveryv1.EndpointSlice, workload string) (Owner, string) {
	switch w := s.Labels[napwakev1alpha1.LabelWorkload]; {
	case Ours(s, workload):
		return Mine, ""
	case w != "" && Ours(s, w):
		return Sharer, w
	default:
		return Foreign, ""
	}
}

// Service names the Service a set of slices is for; its UID, when known,
// makes the Service the slices' owner, so they go with it.
type Service struct {
	Name string
	UID  types.UID
}

// Build returns the slices for one Service's routes (all of them for that
// Service), one per IP family the routes share with the doorman addresses,
// sorted by name.
func Build(namespace, workload string, svc Service, routes []napwakev1alpha1.Route, doormen []Doorman) []discoveryv1.EndpointSlice {
	if len(routes) == 0 {
		return nil
	}
	fams := map[napwakev1alpha1.IPFamily]bool{}
	for _, r := range routes {
		for _, f := range r.IPFamilies {
			fams[f] = true
		}
	}
	var out []discoveryv1.EndpointSlice
	for _, fam := range Families(doormen) {
		if !fams[fam] {
			continue
		}
		s := discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name:      Name(svc.Name, fam),
				Namespace: namespace,
				Labels:    Labels(svc.Name, workload),
			},
			AddressType: discoveryv1.AddressType(fam),
			Endpoints:   Endpoints(doormen, fam),
			Ports:       ports(routes, fam),
		}
		if svc.UID != "" {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID}}
		}
		out = append(out, s)
	}
	return out
}

// BuildAll returns the slices for every route of a workload, grouped by
// Service; uids gives each Service's UID where known.
func BuildAll(namespace, workload string, routes []napwakev1alpha1.Route, uids map[string]types.UID, doormen []Doorman) []discoveryv1.EndpointSlice {
	bySvc := map[string][]napwakev1alpha1.Route{}
	var names []string
	for _, r := range routes {
		if _, ok := bySvc[r.Service]; !ok {
			names = append(names, r.Service)
		}
		bySvc[r.Service] = append(bySvc[r.Service], r)
	}
	sort.Strings(names)
	var out []discoveryv1.EndpointSlice
	for _, n := range names {
		out = append(out, Build(namespace, workload, Service{Name: n, UID: uids[n]}, bySvc[n], doormen)...)
	}
	return out
}

// Endpoints returns one Ready endpoint per doorman address of the family,
// sorted by address so equal sets compare equal. The shape follows what
// ingress controllers need
// (docs/design/pause-wake.md#the-doormans-endpointslices): ready, serving and
// terminating are set explicitly (Traefik reads only serving, others only
// ready), and no endpoint carries a targetRef: the doorman pods live in
// another namespace than the slice, and controllers that look a targetRef
// up in the slice's namespace skip or fail on it.
func Endpoints(doormen []Doorman, family napwakev1alpha1.IPFamily) []discoveryv1.Endpoint {
	var out []discoveryv1.Endpoint
	seen := map[string]bool{}
	for _, d := range doormen {
		if d.Family != family || seen[d.IP] {
			continue
		}
		seen[d.IP] = true
		e := discoveryv1.Endpoint{
			Addresses: []string{d.IP},
			Conditions: discoveryv1.EndpointConditions{
				Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false),
			},
		}
		if d.NodeName != "" {
			e.NodeName = ptr.To(d.NodeName)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addresses[0] < out[j].Addresses[0] })
	return out
}

// ports returns the slice's ports: every one named like the Service port
// (an unnamed Service port as name "", never nil: Traefik skips a port
// without a name) with protocol TCP, which the doorman serves.
func ports(routes []napwakev1alpha1.Route, fam napwakev1alpha1.IPFamily) []discoveryv1.EndpointPort {
	var out []discoveryv1.EndpointPort
	for _, r := range routes {
		has := false
		for _, f := range r.IPFamilies {
			has = has || f == fam
		}
		if !has {
			continue
		}
		out = append(out, discoveryv1.EndpointPort{
			Name:     ptr.To(r.PortName),
			Port:     ptr.To(r.DoormanPort),
			Protocol: ptr.To(corev1.ProtocolTCP),
		})
	}
	return out
}

// NeedsUpdate reports whether the existing slice differs from the desired
// one in what the operator writes: labels, owner, address type, endpoints,
// ports.
func NeedsUpdate(existing, desired *discoveryv1.EndpointSlice) bool {
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return true
		}
	}
	return existing.AddressType != desired.AddressType ||
		!equality.Semantic.DeepEqual(existing.Endpoints, desired.Endpoints) ||
		!equality.Semantic.DeepEqual(existing.Ports, desired.Ports) ||
		(len(desired.OwnerReferences) > 0 && !equality.Semantic.DeepEqual(existing.OwnerReferences, desired.OwnerReferences))
}

// Apply copies what the operator writes from desired onto existing, keeping
// existing's metadata (resourceVersion, other labels).
func Apply(existing, desired *discoveryv1.EndpointSlice) {
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		existing.Labels[k] = v
	}
	if len(desired.OwnerReferences) > 0 {
		existing.OwnerReferences = desired.OwnerReferences
	}
	existing.AddressType = desired.AddressType
	existing.Endpoints = desired.Endpoints
	existing.Ports = desired.Ports
}
