// Package kube is the doorman's thin link to Kubernetes: it watches
// ManagedWorkloads for routes and wake settings, and for Ready endpoints
// the routed Services' own EndpointSlices (FilterEndpoints), the Services
// and their Pods, whose own Ready condition passes held connections before
// the EndpointSlice controller publishes them (PodEndpoints). It writes
// what the doorman may write: the last-request annotations, events, the
// turned-away count, and its own wake key Secret, read by name and filled
// once when the chart left it empty (wakekey.go).
//
// It must not write anything else: no other Secret, no Service, no
// EndpointSlice, no spec.
package kube

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

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
				out = admit(out, netip.AddrPortFrom(ip, port), rules)
			}
		}
	}
	return sortedOnce(out)
}

// PodEndpoints returns the addresses the doorman may dial for one Service
// port from the Service's Pods alone, without waiting for the EndpointSlice
// controller: pods in the Service's namespace that its spec.selector
// selects, Ready by their own PodReady condition, not being deleted and not
// finished, each address one of the pod's status.podIPs of a family the
// Service serves, allowed by rules. The port is the targetPort of the
// Service port named portName (TCP): a number as is, a name looked up in
// the pod's container ports (TCP), unset the Service port's own number. A
// Service without a selector (its EndpointSlices made by hand) or of type
// ExternalName gets nothing here. Sorted, each address once.
func PodEndpoints(svc *corev1.Service, pods []*corev1.Pod, portName string, rules addr.Rules) []netip.AddrPort {
	if svc == nil || len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	sp, ok := servicePort(svc, portName)
	if !ok {
		return nil
	}
	sel := labels.SelectorFromValidatedSet(svc.Spec.Selector)
	var out []netip.AddrPort
	for _, p := range pods {
		if p == nil || p.Namespace != svc.Namespace || !sel.Matches(labels.Set(p.Labels)) ||
			p.DeletionTimestamp != nil || !podReady(p) {
			continue
		}
		port, ok := targetPort(sp, p)
		if !ok {
			continue
		}
		for _, pip := range p.Status.PodIPs {
			ip, err := netip.ParseAddr(pip.IP)
			if err != nil || !servesFamily(svc, ip) {
				continue
			}
			out = admit(out, netip.AddrPortFrom(ip, port), rules)
		}
	}
	return sortedOnce(out)
}

// admit appends ap to out when rules allow it.
func admit(out []netip.AddrPort, ap netip.AddrPort, rules addr.Rules) []netip.AddrPort {
	if rules.CheckAddrPort(ap) != nil {
		return out
	}
	return append(out, ap)
}

// sortedOnce sorts a in place and drops repeats.
func sortedOnce(a []netip.AddrPort) []netip.AddrPort {
	slices.SortFunc(a, func(x, y netip.AddrPort) int { return x.Compare(y) })
	return slices.Compact(a)
}

// servicePort is the TCP port of svc named name.
func servicePort(svc *corev1.Service, name string) (corev1.ServicePort, bool) {
	for _, p := range svc.Spec.Ports {
		if p.Name == name && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) && p.Port >= 1 && p.Port <= 65535 {
			return p, true
		}
	}
	return corev1.ServicePort{}, false
}

// targetPort is the port of pod that sp sends to, as the EndpointSlice
// controller finds it: a number as is, a name in the pod's container ports
// (and its sidecars'), TCP, unset sp's own number.
func targetPort(sp corev1.ServicePort, pod *corev1.Pod) (uint16, bool) {
	t := sp.TargetPort
	switch {
	case t.Type == intstr.Int && t.IntVal == 0, t.Type == intstr.String && t.StrVal == "":
		return uint16(sp.Port), true
	case t.Type == intstr.Int:
		return uint16(t.IntVal), t.IntVal >= 1 && t.IntVal <= 65535
	}
	containers := slices.Clone(pod.Spec.Containers)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers, c)
		}
	}
	for _, c := range containers {
		for _, cp := range c.Ports {
			if cp.Name == t.StrVal && (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP) && cp.ContainerPort >= 1 && cp.ContainerPort <= 65535 {
				return uint16(cp.ContainerPort), true
			}
		}
	}
	return 0, false
}

// podReady: the pod's PodReady condition is True and it has not finished.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// servesFamily: svc serves ip's family (any, when it names none).
func servesFamily(svc *corev1.Service, ip netip.Addr) bool {
	if len(svc.Spec.IPFamilies) == 0 {
		return true
	}
	f := corev1.IPv6Protocol
	if ip.Is4() {
		f = corev1.IPv4Protocol
	}
	return slices.Contains(svc.Spec.IPFamilies, f)
}

// MergeEndpoints is the sorted union of a and b, each address once.
func MergeEndpoints(a, b []netip.AddrPort) []netip.AddrPort {
	return sortedOnce(append(slices.Clone(a), b...))
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
