// Package negcheck checks forwarded EndpointSlices (the ones that lead a
// paused workload's Service in GKE NEGs to the NEG forwarder's pods) against
// what GKE's NEG controller accepts, and against the shape Napwake promises
// for them (docs/compatibility.md, "GKE container-native load balancing").
//
// GKE's NEG controller reads every EndpointSlice labelled with a Service's
// name and, for each endpoint, fails the whole sync when it has no
// nodeName, and skips it when it has no targetRef, when the Pod the
// targetRef names (by namespace and name) does not exist, when the
// endpoint's address is not one of that Pod's status.podIPs, when the Pod
// is in a terminal phase, when the Pod's node is unknown, or when the
// address is outside that node's spec.podCIDRs. It checks the Pod's labels
// against the Service's selector only for slices the EndpointSlice
// controller manages. Napwake adds: the targetRef is {kind: Pod, namespace:
// the Service's, name, uid} of a forwarder pod, nodeName is that pod's node,
// the endpoint has exactly that pod's address of the slice's family, and
// it is there only while the pod is Ready and not terminating.
//
// It is for tests (the operator's envtests and the end-to-end suite): it
// only reads.
package negcheck

import (
	"context"
	"fmt"
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LabelForwarded marks the slices that lead to a forwarder (apis'
// LabelForwarded; shared does not import apis).
const LabelForwarded = "napwake.dev/forwarded"

// endpointSliceController is the managed-by value of Kubernetes' own
// EndpointSlice controller.
const endpointSliceController = "endpointslice-controller.k8s.io"

// Rule names one rule a forwarded slice must keep.
type Rule string

// The rules. Those GKE's NEG controller applies come first.
const (
	// ServiceName: the slice's kubernetes.io/service-name names a Service
	// in its namespace; GKE reads only slices labelled with the Service's
	// name.
	ServiceName Rule = "ServiceName"
	// NodeName: every endpoint has a nodeName; GKE fails the whole sync
	// without one.
	NodeName Rule = "NodeName"
	// TargetRef: every endpoint has a targetRef; GKE skips it without one.
	TargetRef Rule = "TargetRef"
	// TargetRefPod: the targetRef is {kind: Pod, namespace: the Service's
	// namespace} with a name and a uid.
	TargetRefPod Rule = "TargetRefPod"
	// PodExists: the Pod the targetRef names exists, with that uid.
	PodExists Rule = "PodExists"
	// PodIP: the endpoint's addresses are exactly the Pod's address of the
	// slice's family (GKE: one of status.podIPs).
	PodIP Rule = "PodIP"
	// PodNotTerminal: the Pod is not Succeeded or Failed.
	PodNotTerminal Rule = "PodNotTerminal"
	// NodeMatches: the endpoint's nodeName is the Pod's node.
	NodeMatches Rule = "NodeMatches"
	// NodeExists: the Pod's node exists.
	NodeExists Rule = "NodeExists"
	// PodCIDR: the address is inside one of the node's spec.podCIDRs.
	PodCIDR Rule = "PodCIDR"
	// SelectorSkipped: the slice is not managed by the EndpointSlice
	// controller, or GKE would also check the Pod's labels against the
	// Service's selector, which a forwarder pod does not match.
	SelectorSkipped Rule = "SelectorSkipped"
	// PortNames: every port of the slice is named like a port of the
	// Service, as GKE matches them by name.
	PortNames Rule = "PortNames"
	// PodReady: the Pod is Ready and not terminating; the endpoint says
	// ready, serving and not terminating.
	PodReady Rule = "PodReady"
)

// Settles reports whether a rule depends on other objects' state that
// legitimately runs ahead of the slice for a moment (a pod that just
// stopped being Ready, or was deleted, before the operator rewrote the
// slice): a checker watching a live cluster should fail on it only when it
// lasts. The other rules hold for every version of every slice.
func (r Rule) Settles() bool {
	switch r {
	case PodExists, PodIP, PodNotTerminal, NodeExists, PodCIDR, PodReady:
		return true
	}
	return false
}

// Problem is one broken rule, at one slice and, where it applies, one
// endpoint (its first address).
type Problem struct {
	Slice    string // namespace/name
	Endpoint string
	Rule     Rule
	Detail   string
}

func (p Problem) String() string {
	if p.Endpoint == "" {
		return fmt.Sprintf("%s: %s: %s", p.Slice, p.Rule, p.Detail)
	}
	return fmt.Sprintf("%s endpoint %s: %s: %s", p.Slice, p.Endpoint, p.Rule, p.Detail)
}

// Objects are what the check looks the slices' references up in.
type Objects struct {
	Services []corev1.Service
	Pods     []corev1.Pod
	Nodes    []corev1.Node
}

// Check returns every rule the forwarded slices break, in slice order.
func Check(slices []discoveryv1.EndpointSlice, objs Objects) []Problem {
	svcs := map[string]*corev1.Service{}
	for i := range objs.Services {
		s := &objs.Services[i]
		svcs[s.Namespace+"/"+s.Name] = s
	}
	pods := map[string]*corev1.Pod{}
	for i := range objs.Pods {
		p := &objs.Pods[i]
		pods[p.Namespace+"/"+p.Name] = p
	}
	nodes := map[string]*corev1.Node{}
	for i := range objs.Nodes {
		nodes[objs.Nodes[i].Name] = &objs.Nodes[i]
	}
	var out []Problem
	for i := range slices {
		out = append(out, checkSlice(&slices[i], svcs, pods, nodes)...)
	}
	return out
}

func checkSlice(s *discoveryv1.EndpointSlice, svcs map[string]*corev1.Service, pods map[string]*corev1.Pod, nodes map[string]*corev1.Node) []Problem {
	key := s.Namespace + "/" + s.Name
	var out []Problem
	add := func(ep string, r Rule, format string, args ...any) {
		out = append(out, Problem{Slice: key, Endpoint: ep, Rule: r, Detail: fmt.Sprintf(format, args...)})
	}
	svcName := s.Labels[discoveryv1.LabelServiceName]
	svc := svcs[s.Namespace+"/"+svcName]
	if svc == nil {
		add("", ServiceName, "labelled %s=%q, and no such Service is in namespace %s", discoveryv1.LabelServiceName, svcName, s.Namespace)
	}
	if s.Labels[discoveryv1.LabelManagedBy] == endpointSliceController {
		add("", SelectorSkipped, "managed by %s, so GKE checks each Pod against the Service's selector", endpointSliceController)
	}
	if svc != nil {
		names := map[string]bool{}
		for _, p := range svc.Spec.Ports {
			names[p.Name] = true
		}
		for _, p := range s.Ports {
			if p.Name == nil || !names[*p.Name] {
				add("", PortNames, "port %s is not named like a port of Service %s", portName(p.Name), svcName)
			}
		}
	}
	for _, e := range s.Endpoints {
		checkEndpoint(s, &e, pods, nodes, add)
	}
	return out
}

func portName(n *string) string {
	if n == nil {
		return "<no name>"
	}
	return fmt.Sprintf("%q", *n)
}

func checkEndpoint(s *discoveryv1.EndpointSlice, e *discoveryv1.Endpoint, pods map[string]*corev1.Pod, nodes map[string]*corev1.Node,
	add func(string, Rule, string, ...any)) {
	ep := "<no address>"
	if len(e.Addresses) > 0 {
		ep = e.Addresses[0]
	}
	if e.NodeName == nil || *e.NodeName == "" {
		add(ep, NodeName, "no nodeName: GKE fails the whole sync")
	}
	c := e.Conditions
	if c.Ready == nil || !*c.Ready || c.Serving == nil || !*c.Serving || c.Terminating == nil || *c.Terminating {
		add(ep, PodReady, "conditions ready %s, serving %s, terminating %s: want true, true, false, set", boolOf(c.Ready), boolOf(c.Serving), boolOf(c.Terminating))
	}
	ref := e.TargetRef
	if ref == nil {
		add(ep, TargetRef, "no targetRef: GKE skips it")
		return
	}
	if ref.Kind != "Pod" || ref.Namespace != s.Namespace || ref.Name == "" || ref.UID == "" {
		add(ep, TargetRefPod, "targetRef {kind %q, namespace %q, name %q, uid %q}: want a Pod in %s, named, with its uid", ref.Kind, ref.Namespace, ref.Name, ref.UID, s.Namespace)
	}
	pod := pods[ref.Namespace+"/"+ref.Name]
	if pod == nil || (ref.UID != "" && ref.UID != pod.UID) {
		add(ep, PodExists, "no Pod %s/%s with uid %q", ref.Namespace, ref.Name, ref.UID)
		return
	}
	if want := podIPOf(pod, s.AddressType); len(e.Addresses) != 1 || want == "" || e.Addresses[0] != want {
		add(ep, PodIP, "addresses %v: want exactly Pod %s's %s address (status.podIPs %v)", e.Addresses, pod.Name, s.AddressType, pod.Status.PodIPs)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		add(ep, PodNotTerminal, "Pod %s is %s", pod.Name, pod.Status.Phase)
	}
	if pod.DeletionTimestamp != nil || !podReady(pod) {
		add(ep, PodReady, "Pod %s is not Ready or is terminating", pod.Name)
	}
	if e.NodeName != nil && *e.NodeName != "" && *e.NodeName != pod.Spec.NodeName {
		add(ep, NodeMatches, "nodeName %q, but Pod %s runs on %q", *e.NodeName, pod.Name, pod.Spec.NodeName)
	}
	node := nodes[pod.Spec.NodeName]
	if node == nil {
		add(ep, NodeExists, "Pod %s's node %q does not exist", pod.Name, pod.Spec.NodeName)
		return
	}
	for _, a := range e.Addresses {
		if !inPodCIDRs(a, node) {
			add(ep, PodCIDR, "address %s is outside node %s's podCIDRs %v", a, node.Name, node.Spec.PodCIDRs)
		}
	}
}

func boolOf(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podIPOf is the Pod's address of the family, "" when it has none.
func podIPOf(p *corev1.Pod, t discoveryv1.AddressType) string {
	for _, ip := range p.Status.PodIPs {
		a, err := netip.ParseAddr(ip.IP)
		if err != nil {
			continue
		}
		if (t == discoveryv1.AddressTypeIPv4 && a.Is4()) || (t == discoveryv1.AddressTypeIPv6 && a.Is6()) {
			return ip.IP
		}
	}
	return ""
}

func inPodCIDRs(addr string, n *corev1.Node) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	for _, c := range n.Spec.PodCIDRs {
		if p, err := netip.ParsePrefix(c); err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}

// Live reads the forwarded slices of namespace (labelled
// napwake.dev/forwarded=true), the namespace's Services and Pods and every
// Node, and checks them. It returns the slices too, sorted by name, so a
// caller can tell it looked at something.
func Live(ctx context.Context, c client.Reader, namespace string) ([]discoveryv1.EndpointSlice, []Problem, error) {
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices, client.InNamespace(namespace), client.MatchingLabelsSelector{
		Selector: labels.SelectorFromSet(labels.Set{LabelForwarded: "true"})}); err != nil {
		return nil, nil, fmt.Errorf("listing the forwarded EndpointSlices of %s: %w", namespace, err)
	}
	objs, err := Read(ctx, c, namespace)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(slices.Items, func(i, j int) bool { return slices.Items[i].Name < slices.Items[j].Name })
	return slices.Items, Check(slices.Items, objs), nil
}

// Read reads the objects Check looks the slices of namespace up in.
func Read(ctx context.Context, c client.Reader, namespace string) (Objects, error) {
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs, client.InNamespace(namespace)); err != nil {
		return Objects{}, fmt.Errorf("listing the Services of %s: %w", namespace, err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return Objects{}, fmt.Errorf("listing the Pods of %s: %w", namespace, err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return Objects{}, fmt.Errorf("listing the Nodes: %w", err)
	}
	return Objects{Services: svcs.Items, Pods: pods.Items, Nodes: nodes.Items}, nil
}
