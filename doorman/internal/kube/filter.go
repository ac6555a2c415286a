// Package kube is the doorman's thin link to Kubernetes: it watches
// ManagedWorkloads for routes and wake settings, the routed Services' own
// EndpointSlices and Pods for Ready endpoints, and writes what the doorman
// may write: the last-request annotations, events, the turned-away count,
// and its own wake key Secret, read by name and filled once when the chart
// left it empty (wakekey.go).
//
// It must not write anything else: no other Secret, no Service, no
// EndpointSlice, no spec.
package kube

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"napwake.dev/doorman/internal/addr"
	"napwake.dev/shared/sliceowner"
)

// FilterEndpoints returns the addresses the doorman may dial for one
// Service port: Ready, not terminating endpoints of EndpointSlices the
// EndpointSlice controller manages for that Service in namespace (its
// managed-by label, and its controller owner reference to the Service, as
// the controller sets it: a slice someone labelled by hand to look like the
// controller's is never read), whose targetRef is a Pod in namespace and
// whose address is one of that Pod's status.podIPs, on the slice port named
// portName, allowed by rules.
// pod looks a Pod of namespace up by name; nil when there is none.
func FilterEndpoints(eps []*discoveryv1.EndpointSlice, pod func(name string) *corev1.Pod, namespace, service, portName string, rules addr.Rules) []netip.AddrPort {
	var out []netip.AddrPort
	for _, s := range eps {
		if s == nil || s.Namespace != namespace || !sliceowner.ByController(s, service) ||
			(s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6) {
			continue
		}
		port, ok := slicePort(s, portName)
		if !ok {
			continue
		}
		for _, e := range s.Endpoints {
			c := e.Conditions
			if c.Ready == nil || !*c.Ready || (c.Terminating != nil && *c.Terminating) {
				continue
			}
			ref := e.TargetRef
			if ref == nil || ref.Kind != "Pod" || ref.Name == "" || (ref.Namespace != "" && ref.Namespace != namespace) {
				continue
			}
			p := pod(ref.Name)
			if p == nil || p.Namespace != namespace || p.Name != ref.Name || (ref.UID != "" && ref.UID != p.UID) {
				continue
			}
			for _, a := range e.Addresses {
				ip, err := netip.ParseAddr(a)
				if err != nil || (s.AddressType == discoveryv1.AddressTypeIPv4) != ip.Is4() || !podHasIP(p, ip) {
					continue
				}
				ap := netip.AddrPortFrom(ip, port)
				if rules.CheckAddrPort(ap) != nil || slices.Contains(out, ap) {
					continue
				}
				out = append(out, ap)
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return out
}

func slicePort(s *discoveryv1.EndpointSlice, name string) (uint16, bool) {
	for _, p := range s.Ports {
		n := ""
		if p.Name != nil {
			n = *p.Name
		}
		if n != name || p.Port == nil || *p.Port < 1 || *p.Port > 65535 {
			continue
		}
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		return uint16(*p.Port), true
	}
	return 0, false
}

func podHasIP(p *corev1.Pod, ip netip.Addr) bool {
	for _, pip := range p.Status.PodIPs {
		if a, err := netip.ParseAddr(pip.IP); err == nil && a == ip {
			return true
		}
	}
	return false
}
