// Package plan decides, without a client or a clock, which Service ports of a
// paused workload are routed to the doorman, and what the WakeOnRequest
// condition says about it (docs/design/pause-wake.md#routing-a-service).
// The routing shell gathers the inputs from the API server and acts
// on the decision.
//
// It must not read the cluster or the clock: the Router gathers its input.
package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Input is everything a routing decision depends on.
type Input struct {
	// PodLabels are the workload's pod template labels; a Service selects
	// the workload when its selector is a non-empty subset of them.
	PodLabels map[string]string
	// Services are every Service in the workload's namespace.
	Services []corev1.Service
	// Ingresses are every Ingress in the workload's namespace (GKE rules).
	Ingresses []networkingv1.Ingress
	// ServedByOtherPods names the Services another workload's Ready pods
	// serve, read from the Services' own EndpointSlices.
	ServedByOtherPods map[string]bool
	// DoormanFamilies are the IP families some Ready doorman pod has an
	// address in.
	DoormanFamilies []napwakev1alpha1.IPFamily
	// Forwarder is true when the NEG forwarder is on: a Service in GKE
	// NEGs is routed through it rather than left out.
	Forwarder bool
	// NamedPorts are the workload's container ports by name, to resolve a
	// forwarded Service's named targetPort.
	NamedPorts map[string]int32
}

// Want is one Service port to route, before a doorman port is allocated.
type Want struct {
	Service    string
	PortName   string
	Port       int32
	IPFamilies []napwakev1alpha1.IPFamily
	// Forwarded is true for a port of a Service in GKE NEGs, routed
	// through the NEG forwarder: its slices lead to the forwarder's pods,
	// which listen on TargetPort.
	Forwarded  bool
	TargetPort int32
}

// LeftOut is a Service (or some of its ports) not routed, and why.
type LeftOut struct {
	// Service is the Service's name.
	Service string
	// Reason is the condition reason this stands for when no Service is
	// routed: one of ReasonServedByOtherPods, ReasonNodeLocalTraffic,
	// ReasonUnsupportedIPFamily, ReasonUnsupportedLoadBalancer or
	// ReasonNoServices.
	Reason string
	// Why is a short phrase for the condition message.
	Why string
}

// Decision is the outcome of Decide.
type Decision struct {
	// Routes are the Service ports to route, sorted by Service then port.
	Routes []Want
	// LeftOut are the Services selecting the pods that are not (fully)
	// routed, sorted by Service.
	LeftOut []LeftOut
	// Notes are problems with inputs the user should see, such as an
	// unreadable annotation.
	Notes []string
	// Invalid are the GKE NEG annotations that could not be read (also in
	// Notes), for an InvalidSetting event.
	Invalid []string
	// ForwarderNotReady, set by the shell, says why no forwarder pod is
	// Ready yet; "" once one is. Condition then counts the forwarded
	// routes as not routed yet.
	ForwarderNotReady string
}

// Decide works out routes afresh from the input.
func Decide(in Input) Decision {
	var d Decision
	families := map[napwakev1alpha1.IPFamily]bool{}
	for _, f := range in.DoormanFamilies {
		families[f] = true
	}
	svcs := append([]corev1.Service(nil), in.Services...)
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].Name < svcs[j].Name })
	for i := range svcs {
		svc := &svcs[i]
		if !Selects(svc, in.PodLabels) {
			continue
		}
		negWhy, invalid := InNEGs(svc, in.Ingresses)
		d.Notes = append(d.Notes, invalid...)
		d.Invalid = append(d.Invalid, invalid...)
		if lo, ok := serviceLeftOut(svc, in, families, negWhy); ok {
			d.LeftOut = append(d.LeftOut, lo)
			continue
		}
		var named map[string]int32
		if negWhy != "" {
			named = in.NamedPorts
			if named == nil {
				named = map[string]int32{}
			}
		}
		routes, leftOut, notes := servicePorts(svc, families, named)
		d.Routes = append(d.Routes, routes...)
		d.Notes = append(d.Notes, notes...)
		if leftOut != nil {
			d.LeftOut = append(d.LeftOut, *leftOut)
		}
	}
	return d
}

// Selects reports whether the Service's selector picks pods with these
// labels. A Service without a selector selects nothing: its endpoints are
// not the workload's pods.
func Selects(svc *corev1.Service, podLabels map[string]string) bool {
	if len(svc.Spec.Selector) == 0 {
		return false
	}
	for k, v := range svc.Spec.Selector {
		if got, ok := podLabels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// serviceLeftOut reports whether the whole Service is left out.
// negWhy, when not "", says why it is in GKE NEGs.
func serviceLeftOut(svc *corev1.Service, in Input, families map[napwakev1alpha1.IPFamily]bool, negWhy string) (LeftOut, bool) {
	lo := func(reason, why string) (LeftOut, bool) {
		return LeftOut{Service: svc.Name, Reason: reason, Why: why}, true
	}
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		return lo(napwakev1alpha1.ReasonNoServices, "ExternalName")
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return lo(napwakev1alpha1.ReasonNoServices, "headless, callers resolve pod IPs from DNS")
	case len(svc.Spec.Ports) == 0:
		return lo(napwakev1alpha1.ReasonNoServices, "no ports")
	}
	if why := duplicatePortNames(svc.Spec.Ports); why != "" {
		return lo(napwakev1alpha1.ReasonNoServices, why)
	}
	if negWhy != "" && !in.Forwarder {
		return lo(napwakev1alpha1.ReasonUnsupportedLoadBalancer, "in GKE NEGs: "+negWhy)
	}
	if in.ServedByOtherPods[svc.Name] {
		return lo(napwakev1alpha1.ReasonServedByOtherPods, "another workload's Ready pods serve it")
	}
	if p := svc.Spec.InternalTrafficPolicy; p != nil && *p == corev1.ServiceInternalTrafficPolicyLocal {
		return lo(napwakev1alpha1.ReasonNodeLocalTraffic, "internalTrafficPolicy: Local")
	}
	if len(svcFamilies(svc, families)) == 0 {
		return lo(napwakev1alpha1.ReasonUnsupportedIPFamily,
			fmt.Sprintf("%s, and no Ready doorman pod has an address in it", familyList(serviceFamilies(svc))))
	}
	return LeftOut{}, false
}

func duplicatePortNames(ports []corev1.ServicePort) string {
	seen := map[string]bool{}
	for _, p := range ports {
		if seen[p.Name] {
			if p.Name == "" {
				return "more than one unnamed port"
			}
			return fmt.Sprintf("duplicate port name %q", p.Name)
		}
		seen[p.Name] = true
	}
	return ""
}

// servicePorts returns the routable ports of a Service that is not left out
// as a whole, and the ports left out, if any. A non-nil named (the
// container ports by name) says the Service goes through the forwarder.
func servicePorts(svc *corev1.Service, families map[napwakev1alpha1.IPFamily]bool, named map[string]int32) ([]Want, *LeftOut, []string) {
	var notes []string
	ignore, err := ParseIgnorePorts(svc.Annotations[napwakev1alpha1.AnnotationDoormanIgnorePorts])
	if err != nil {
		notes = append(notes, fmt.Sprintf("Service %s: %v", svc.Name, err))
	}
	fams := svcFamilies(svc, families)
	var routes []Want
	var notTCP, unresolved []string
	for _, p := range svc.Spec.Ports {
		if ignore.Ignores(p.Name, p.Port) {
			continue
		}
		if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
			notTCP = append(notTCP, fmt.Sprintf("%s %s", portLabel(p), p.Protocol))
			continue
		}
		w := Want{Service: svc.Name, PortName: p.Name, Port: p.Port, IPFamilies: fams}
		if named != nil {
			tp, ok := TargetPort(p, named)
			if !ok {
				unresolved = append(unresolved, fmt.Sprintf("%s (targetPort %q)", portLabel(p), p.TargetPort.String()))
				continue
			}
			w.Forwarded, w.TargetPort = true, tp
		}
		routes = append(routes, w)
	}
	if len(notTCP) == 0 && len(unresolved) == 0 && len(routes) > 0 {
		return routes, nil, notes
	}
	var whys []string
	if len(notTCP) > 0 {
		whys = append(whys, "only TCP ports are routed, not "+strings.Join(notTCP, ", "))
	}
	if len(unresolved) > 0 {
		whys = append(whys, "the forwarder cannot listen on "+strings.Join(unresolved, ", ")+": no container port of the pods has that name")
	}
	if len(whys) == 0 {
		whys = append(whys, "every port is in "+napwakev1alpha1.AnnotationDoormanIgnorePorts)
	}
	return routes, &LeftOut{Service: svc.Name, Reason: napwakev1alpha1.ReasonNoServices, Why: strings.Join(whys, "; ")}, notes
}

// TargetPort is the port the Service port's endpoints listen on: its
// targetPort, resolved by name against the container ports, or the port
// itself when unset.
func TargetPort(p corev1.ServicePort, named map[string]int32) (int32, bool) {
	switch {
	case p.TargetPort.Type == intstr.String:
		n, ok := named[p.TargetPort.StrVal]
		return n, ok && n > 0
	case p.TargetPort.IntVal > 0:
		return p.TargetPort.IntVal, true
	default:
		return p.Port, true
	}
}

func portLabel(p corev1.ServicePort) string {
	if p.Name != "" {
		return p.Name
	}
	return fmt.Sprint(p.Port)
}

// serviceFamilies is the Service's IP families; IPv4 when unset, as on
// clusters that predate dual-stack.
func serviceFamilies(svc *corev1.Service) []napwakev1alpha1.IPFamily {
	if len(svc.Spec.IPFamilies) == 0 {
		return []napwakev1alpha1.IPFamily{napwakev1alpha1.IPFamily(corev1.IPv4Protocol)}
	}
	out := make([]napwakev1alpha1.IPFamily, 0, len(svc.Spec.IPFamilies))
	for _, f := range svc.Spec.IPFamilies {
		out = append(out, napwakev1alpha1.IPFamily(f))
	}
	return out
}

func svcFamilies(svc *corev1.Service, families map[napwakev1alpha1.IPFamily]bool) []napwakev1alpha1.IPFamily {
	var out []napwakev1alpha1.IPFamily
	for _, f := range serviceFamilies(svc) {
		if families[f] {
			out = append(out, f)
		}
	}
	return out
}

func familyList(fs []napwakev1alpha1.IPFamily) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, "/")
}

// UnsupportedLB names the Services left out for GKE NEGs, for the warning
// event.
func (d Decision) UnsupportedLB() []string {
	var out []string
	for _, lo := range d.LeftOut {
		if lo.Reason == napwakev1alpha1.ReasonUnsupportedLoadBalancer {
			out = append(out, lo.Service)
		}
	}
	return out
}

// ServedByOtherPods reports whether some Service was left out because other
// pods serve it: the decision must be made again within 30 seconds.
func (d Decision) ServedByOtherPods() bool {
	for _, lo := range d.LeftOut {
		if lo.Reason == napwakev1alpha1.ReasonServedByOtherPods {
			return true
		}
	}
	return false
}

// Condition is the WakeOnRequest condition's status, reason and message.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Messages of the routed condition.
const (
	MessageRouted    = "requests are held and wake the workload"
	MessageRoutedAsk = "the doorman asks a person's browser before waking the workload, and turns away other requests"
	// MessageNoReadinessProbe is added when no container has a readiness
	// or startup probe and the pod has no readiness gates.
	MessageNoReadinessProbe = "no container has a readiness or startup probe and there are no readiness gates, so a held request may reach the app before it can serve"
	// notRoutedPrefix starts the part of a message naming the Services
	// left out.
	notRoutedPrefix = "not routed: "
)

// reasonOrder is which reason a condition with no Service routed reports
// when several apply: the most specific first.
var reasonOrder = []string{
	napwakev1alpha1.ReasonUnsupportedLoadBalancer,
	napwakev1alpha1.ReasonServedByOtherPods,
	napwakev1alpha1.ReasonNodeLocalTraffic,
	napwakev1alpha1.ReasonUnsupportedIPFamily,
}

// Condition is what WakeOnRequest says once the decision's routes are in
// place. ask is true for wake mode Ask; noProbe when MessageNoReadinessProbe
// applies.
func (d Decision) Condition(ask, noProbe bool) Condition {
	waiting := d.waitingForForwarder()
	if len(waiting) > 0 && !slices.ContainsFunc(d.Routes, func(w Want) bool { return !w.Forwarded }) {
		msg := fmt.Sprintf("no Service is routed yet: %s wait for the NEG forwarder, which has no Ready pod: %s", strings.Join(waiting, ", "), d.ForwarderNotReady)
		if len(d.LeftOut) > 0 {
			msg += "; " + notRoutedPrefix + d.leftOutList()
		}
		return Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonForwarderNotReady, Message: join(msg, d.Notes...)}
	}
	if len(d.Routes) == 0 {
		reason := napwakev1alpha1.ReasonNoServices
		for _, r := range reasonOrder {
			if d.has(r) {
				reason = r
				break
			}
		}
		msg := "no Service selects the workload's pods"
		if len(d.LeftOut) > 0 {
			msg = "no Service is routed: " + d.leftOutList()
		}
		if reason == napwakev1alpha1.ReasonNoServices {
			msg += "; a workload no request reaches wakes on an activity annotation or a Prometheus activity query"
		}
		return Condition{Status: metav1.ConditionFalse, Reason: reason, Message: join(msg, d.Notes...)}
	}
	msg := MessageRouted
	if ask {
		msg = MessageRoutedAsk
	}
	var parts []string
	if len(d.LeftOut) > 0 {
		parts = append(parts, notRoutedPrefix+d.leftOutList())
	}
	if len(waiting) > 0 {
		parts = append(parts, fmt.Sprintf("%s routed once the NEG forwarder has a Ready pod: %s", strings.Join(waiting, ", "), d.ForwarderNotReady))
	}
	if noProbe {
		parts = append(parts, MessageNoReadinessProbe)
	}
	parts = append(parts, d.Notes...)
	return Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonDoormanRouted, Message: join(msg, parts...)}
}

// waitingForForwarder names the Services (each once, in order) whose
// routes wait for a Ready forwarder pod.
func (d Decision) waitingForForwarder() []string {
	if d.ForwarderNotReady == "" {
		return nil
	}
	var out []string
	for _, r := range d.Routes {
		if r.Forwarded && !slices.Contains(out, r.Service) {
			out = append(out, r.Service)
		}
	}
	return out
}

func (d Decision) has(reason string) bool {
	for _, lo := range d.LeftOut {
		if lo.Reason == reason {
			return true
		}
	}
	return false
}

func (d Decision) leftOutList() string {
	s := make([]string, len(d.LeftOut))
	for i, lo := range d.LeftOut {
		s[i] = fmt.Sprintf("%s (%s)", lo.Service, lo.Why)
	}
	return strings.Join(s, ", ")
}

func join(first string, rest ...string) string {
	return strings.Join(append([]string{first}, rest...), "; ")
}

// HasReadinessProbe reports whether a held request waits for the app: some
// container has a readiness probe or a startup probe (a container is not
// Ready until its startup probe passes), or the pod has readiness gates.
func HasReadinessProbe(tmpl *corev1.PodTemplateSpec) bool {
	if len(tmpl.Spec.ReadinessGates) > 0 {
		return true
	}
	for _, c := range tmpl.Spec.Containers {
		if c.ReadinessProbe != nil || c.StartupProbe != nil {
			return true
		}
	}
	return false
}

// carriedReasons are the problems with a workload's Services found at a pause
// that stay on the condition while it is awake.
var carriedReasons = map[string]bool{
	napwakev1alpha1.ReasonServedByOtherPods:       true,
	napwakev1alpha1.ReasonNodeLocalTraffic:        true,
	napwakev1alpha1.ReasonUnsupportedIPFamily:     true,
	napwakev1alpha1.ReasonUnsupportedLoadBalancer: true,
	napwakev1alpha1.ReasonTooManyPorts:            true,
}

// MessageNotPaused is the NotPaused condition's message with nothing to carry.
const MessageNotPaused = "the workload is awake, and its Services lead to its pods"

// NotPaused is the condition once a workload is awake, given what the
// condition said before: a problem with its Services found at the last pause
// stays, its message starting with CarriedOverPrefix.
func NotPaused(prev *metav1.Condition) Condition {
	notPaused := Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonNotPaused, Message: MessageNotPaused}
	if prev == nil {
		return notPaused
	}
	if strings.HasPrefix(prev.Message, napwakev1alpha1.CarriedOverPrefix) {
		return Condition{Status: metav1.ConditionFalse, Reason: prev.Reason, Message: prev.Message}
	}
	if carriedReasons[prev.Reason] {
		return Condition{Status: metav1.ConditionFalse, Reason: prev.Reason, Message: napwakev1alpha1.CarriedOverPrefix + prev.Message}
	}
	if prev.Reason == napwakev1alpha1.ReasonDoormanRouted {
		for _, part := range strings.Split(prev.Message, "; ") {
			if strings.HasPrefix(part, notRoutedPrefix) {
				notPaused.Message = napwakev1alpha1.CarriedOverPrefix + part
			}
		}
	}
	return notPaused
}
