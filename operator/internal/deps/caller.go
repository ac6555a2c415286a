package deps

import (
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Pod is what CallerOf needs of one Pod that may have sent a request.
// PodFrom fills it.
type Pod struct {
	// Key names the Pod, for logs.
	Key Key
	// IPs are status.podIPs.
	IPs []string
	// Phase is status.phase.
	Phase corev1.PodPhase
	// IPSince is a time by which the Pod certainly had its IPs; zero if
	// unknown, and then it teaches nothing.
	IPSince time.Time
	// Deleting is true once metadata.deletionTimestamp is set: the kubelet
	// may already have freed its IP for another Pod while the object still
	// lists it.
	Deleting bool
	// HostNetwork is spec.hostNetwork: the IP is the node's, shared by
	// every such Pod and by whatever the node forwards (load balancers).
	HostNetwork bool
	// Forwarder is true for a NEG forwarder's Pod: it passes on others'
	// requests.
	Forwarder bool
	// Workload is the ManagedWorkload of the workload (Deployment,
	// StatefulSet or other kind) that owns the Pod; zero if there is none.
	Workload Key
}

// PodFrom reads a Pod. workload is the ManagedWorkload of its owning
// workload, which the caller looks up (zero if none).
// IPSince is when the PodReadyToStartContainers condition turned True (the
// sandbox and its network were ready), else the earliest start of a running
// container: both come after the Pod got its current IPs.
func PodFrom(p *corev1.Pod, workload Key) Pod {
	out := Pod{
		Key:         Key{Namespace: p.Namespace, Name: p.Name},
		Phase:       p.Status.Phase,
		Deleting:    p.DeletionTimestamp != nil,
		HostNetwork: p.Spec.HostNetwork,
		Forwarder:   p.Labels[napwakev1alpha1.LabelAppName] == napwakev1alpha1.AppNameForwarder,
		Workload:    workload,
	}
	for _, ip := range p.Status.PodIPs {
		out.IPs = append(out.IPs, ip.IP)
	}
	if len(out.IPs) == 0 && p.Status.PodIP != "" {
		out.IPs = []string{p.Status.PodIP}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionTrue {
			out.IPSince = c.LastTransitionTime.Time
			return out
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if r := c.State.Running; r != nil && (out.IPSince.IsZero() || r.StartedAt.Time.Before(out.IPSince)) {
			out.IPSince = r.StartedAt.Time
		}
	}
	return out
}

// Caller is what a request's source address teaches.
type Caller struct {
	// Workload is the calling ManagedWorkload; zero when nothing is learned.
	Workload Key
	// Pod is the calling Pod, when one was found.
	Pod Key
	// Why says why nothing is learned, for logs; empty when Workload is set.
	Why string
}

// Found reports whether a calling workload was found.
func (c Caller) Found() bool { return c.Why == "" }

// Reasons CallerOf learns nothing.
const (
	WhyNotAnAddress = "not a unicast IP address"
	WhyNoTime       = "no request time"
	WhyNoPod        = "no Running Pod certainly held the address when the request came"
	WhyAmbiguous    = "more than one Pod held the address when the request came"
	WhyForwarder    = "seen through a forwarder"
	WhyNotManaged   = "the calling Pod is not a managed workload's"
	WhySelf         = "the workload called itself"
)

// CallerOf works out which ManagedWorkload sent a request to callee from
// address from (napwake.dev/last-request-from) at time at
// (napwake.dev/last-request), among pods, the candidate Pods (those the
// caller's index has for that address will do; any others are skipped). It
// learns nothing when:
//
//   - from is not a unicast IP address (an IPv4-mapped IPv6 address counts
//     as its IPv4 address; a zone is ignored), or at is zero;
//   - no Pod listing the address was Running, not being deleted, not on the
//     host network, and certainly had the address at or before at (compared
//     at whole seconds, the precision Pod times are written in; equal counts):
//     a reused IP, or a deleted Pod that used to have it, teaches nothing;
//     and so do load balancers and nodes, whose addresses are no Pod's but
//     host-network ones';
//   - more than one Pod qualifies (a stale cache);
//   - the Pod is a forwarder's, belongs to no ManagedWorkload (an ingress
//     controller), or belongs to callee itself.
func CallerOf(from string, at time.Time, callee Key, pods []Pod) Caller {
	addr, ok := parseAddr(from)
	if !ok {
		return Caller{Why: WhyNotAnAddress}
	}
	if at.IsZero() {
		return Caller{Why: WhyNoTime}
	}
	at = at.Truncate(time.Second)
	var found *Pod
	for i := range pods {
		p := &pods[i]
		if !holds(p, addr) || p.Phase != corev1.PodRunning || p.Deleting || p.HostNetwork ||
			p.IPSince.IsZero() || p.IPSince.Truncate(time.Second).After(at) {
			continue
		}
		if found != nil && found.Key != p.Key {
			return Caller{Why: WhyAmbiguous}
		}
		found = p
	}
	switch {
	case found == nil:
		return Caller{Why: WhyNoPod}
	case found.Forwarder:
		return Caller{Pod: found.Key, Why: WhyForwarder}
	case found.Workload.Name == "":
		return Caller{Pod: found.Key, Why: WhyNotManaged}
	case found.Workload == callee:
		return Caller{Pod: found.Key, Why: WhySelf}
	}
	return Caller{Workload: found.Workload, Pod: found.Key}
}

// parseAddr reads a caller's address: one IP, nothing around it.
func parseAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	a = a.Unmap().WithZone("")
	if !a.IsValid() || a.IsUnspecified() || a.IsLoopback() || a.IsMulticast() {
		return netip.Addr{}, false
	}
	return a, true
}

func holds(p *Pod, addr netip.Addr) bool {
	for _, ip := range p.IPs {
		if a, err := netip.ParseAddr(ip); err == nil && a.Unmap().WithZone("") == addr {
			return true
		}
	}
	return false
}
