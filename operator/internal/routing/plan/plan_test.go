package plan

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

var (
	v4   = napwakev1alpha1.IPFamily(corev1.IPv4Protocol)
	v6   = napwakev1alpha1.IPFamily(corev1.IPv6Protocol)
	pods = map[string]string{"app": "api", "track": "stable"}
)

type svcOpt func(*corev1.Service)

func svc(name string, opts ...svcOpt) corev1.Service {
	s := corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "preview-42"},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "api"},
			ClusterIP:  "10.96.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func ports(ps ...corev1.ServicePort) svcOpt { return func(s *corev1.Service) { s.Spec.Ports = ps } }
func annotate(k, v string) svcOpt {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}
func families(fs ...corev1.IPFamily) svcOpt {
	return func(s *corev1.Service) { s.Spec.IPFamilies = fs }
}

func ingress(name string, class *string, backend string) networkingv1.Ingress {
	ing := networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if class != nil {
		ing.Annotations = map[string]string{napwakev1alpha1.AnnotationIngressClass: *class}
	}
	ing.Spec.Rules = []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
		Paths: []networkingv1.HTTPIngressPath{{Path: "/", Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: backend}}}},
	}}}}
	return ing
}

func TestDecide(t *testing.T) {
	tcp := func(name string, port int32) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: port, Protocol: corev1.ProtocolTCP}
	}
	many := make([]corev1.ServicePort, 100)
	for i := range many {
		many[i] = tcp(fmt.Sprintf("p%d", i), int32(8000+i))
	}
	negIngress := annotate(napwakev1alpha1.AnnotationGKENEG, `{"ingress": true}`)
	tests := []struct {
		name       string
		in         Input
		ask        bool
		noProbe    bool
		wantRoutes []string // service/portName/port/families
		wantStatus metav1.ConditionStatus
		wantReason string
		wantInMsg  []string
	}{
		{
			name:       "a workload no Service selects reports NoServices",
			in:         Input{Services: []corev1.Service{svc("other", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNoServices,
			wantInMsg: []string{"no Service selects the workload's pods"},
		},
		{
			name:       "a TCP Service selecting the pods is routed on every family the doorman has",
			in:         Input{Services: []corev1.Service{svc("api", families(corev1.IPv4Protocol, corev1.IPv6Protocol))}},
			wantRoutes: []string{"api/http/80/IPv4,IPv6"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
			wantInMsg: []string{MessageRouted},
		},
		{
			name:       "with wake mode Ask the condition says the doorman asks",
			in:         Input{Services: []corev1.Service{svc("api")}},
			ask:        true,
			wantRoutes: []string{"api/http/80/IPv4"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
			wantInMsg: []string{MessageRoutedAsk},
		},
		{
			name:       "no readiness probe is named on a routed condition",
			in:         Input{Services: []corev1.Service{svc("api")}},
			noProbe:    true,
			wantRoutes: []string{"api/http/80/IPv4"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
			wantInMsg: []string{MessageNoReadinessProbe},
		},
		{
			name:       "a headless Service is left out and named",
			in:         Input{Services: []corev1.Service{svc("api"), svc("api-pods", func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })}},
			wantRoutes: []string{"api/http/80/IPv4"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
			wantInMsg: []string{"not routed: api-pods (headless"},
		},
		{
			name: "selector-less and ExternalName Services are not the workload's and route nothing",
			in: Input{Services: []corev1.Service{
				svc("manual", func(s *corev1.Service) { s.Spec.Selector = nil }),
				svc("ext", func(s *corev1.Service) {
					s.Spec.Type = corev1.ServiceTypeExternalName
					s.Spec.ExternalName = "example.com"
				}),
			}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNoServices,
			wantInMsg: []string{"no Service is routed: ext (ExternalName)"},
		},
		{
			name: "UDP and SCTP ports are not routed, TCP ones beside them are",
			in: Input{Services: []corev1.Service{svc("dns", ports(tcp("tcp", 53),
				corev1.ServicePort{Name: "udp", Port: 53, Protocol: corev1.ProtocolUDP},
				corev1.ServicePort{Name: "sctp", Port: 9, Protocol: corev1.ProtocolSCTP}))}},
			wantRoutes: []string{"dns/tcp/53/IPv4"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
			wantInMsg: []string{"dns (only TCP ports are routed, not udp UDP, sctp SCTP)"},
		},
		{
			name:       "a Service with only UDP ports gives NoServices",
			in:         Input{Services: []corev1.Service{svc("dns", ports(corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP}))}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNoServices,
			wantInMsg: []string{"dns (only TCP ports are routed, not 53 UDP)"},
		},
		{
			name: "doorman-ignore-ports keeps ports away by name and by number",
			in: Input{Services: []corev1.Service{svc("api", ports(tcp("http", 80), tcp("metrics", 9090), tcp("admin", 9091)),
				annotate(napwakev1alpha1.AnnotationDoormanIgnorePorts, " metrics , 9091"))}},
			wantRoutes: []string{"api/http/80/IPv4"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
		},
		{
			name:       "every port ignored gives NoServices",
			in:         Input{Services: []corev1.Service{svc("api", annotate(napwakev1alpha1.AnnotationDoormanIgnorePorts, "http"))}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNoServices,
			wantInMsg: []string{"every port is in napwake.dev/doorman-ignore-ports"},
		},
		{
			name: "an unreadable ignore list still ignores what it names, and says what it could not read",
			in: Input{Services: []corev1.Service{svc("api", ports(tcp("http", 80), tcp("metrics", 9090)),
				annotate(napwakev1alpha1.AnnotationDoormanIgnorePorts, "metrics,99999"))}},
			wantRoutes: []string{"api/http/80/IPv4"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
			wantInMsg: []string{`not a port name or number: "99999"`},
		},
		{
			name:       "a Service other pods serve is ServedByOtherPods when nothing is routed",
			in:         Input{Services: []corev1.Service{svc("api")}, ServedByOtherPods: map[string]bool{"api": true}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonServedByOtherPods,
			wantInMsg: []string{"api (another workload's Ready pods serve it)"},
		},
		{
			name: "internalTrafficPolicy Local is NodeLocalTraffic when nothing is routed",
			in: Input{Services: []corev1.Service{svc("api", func(s *corev1.Service) {
				s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
			})}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNodeLocalTraffic,
		},
		{
			name: "internalTrafficPolicy Local beside a routed Service is named in the message",
			in: Input{Services: []corev1.Service{svc("api"), svc("local", func(s *corev1.Service) {
				s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
			})}},
			wantRoutes: []string{"api/http/80/IPv4"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
			wantInMsg: []string{"not routed: local (internalTrafficPolicy: Local)"},
		},
		{
			name:       "an IPv6-only Service with IPv4-only doorman pods is UnsupportedIPFamily",
			in:         Input{Services: []corev1.Service{svc("api", families(corev1.IPv6Protocol))}, DoormanFamilies: []napwakev1alpha1.IPFamily{v4}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonUnsupportedIPFamily,
			wantInMsg: []string{"IPv6, and no Ready doorman pod has an address in it"},
		},
		{
			name:       "a dual-stack Service with IPv6-only doorman pods is routed on IPv6",
			in:         Input{Services: []corev1.Service{svc("api", families(corev1.IPv4Protocol, corev1.IPv6Protocol))}, DoormanFamilies: []napwakev1alpha1.IPFamily{v6}},
			wantRoutes: []string{"api/http/80/IPv6"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
		},
		{
			name:       "a Service a GKE Ingress uses while it has neg ingress true is UnsupportedLoadBalancer",
			in:         Input{Services: []corev1.Service{svc("api", negIngress)}, Ingresses: []networkingv1.Ingress{ingress("web", ptr.To("gce"), "api")}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonUnsupportedLoadBalancer,
			wantInMsg: []string{"api (in GKE NEGs: GKE Ingress web uses it)"},
		},
		{
			name: "neg ingress true alone, with no GKE Ingress using it, is routed",
			in: Input{Services: []corev1.Service{svc("api", negIngress)}, Ingresses: []networkingv1.Ingress{
				ingress("nginx", ptr.To("nginx"), "api"),
				func() networkingv1.Ingress {
					i := ingress("classname", nil, "api")
					i.Spec.IngressClassName = ptr.To("nginx")
					return i
				}(),
				ingress("gce-other", ptr.To("gce"), "web"),
			}},
			wantRoutes: []string{"api/http/80/IPv4"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
		},
		{
			name:       "an Ingress with no class at all is GKE's",
			in:         Input{Services: []corev1.Service{svc("api", negIngress)}, Ingresses: []networkingv1.Ingress{ingress("default", nil, "api")}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonUnsupportedLoadBalancer,
		},
		{
			name:       "standalone NEGs (exposed_ports) are UnsupportedLoadBalancer, named beside a routed Service",
			in:         Input{Services: []corev1.Service{svc("api"), svc("gw", annotate(napwakev1alpha1.AnnotationGKENEG, `{"exposed_ports":{"80":{}}}`))}},
			wantRoutes: []string{"api/http/80/IPv4"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
			wantInMsg: []string{"not routed: gw (in GKE NEGs: standalone NEGs"},
		},
		{
			name:       "neg-status from GKE's NEG controller is UnsupportedLoadBalancer",
			in:         Input{Services: []corev1.Service{svc("api", annotate(napwakev1alpha1.AnnotationGKENEGStatus, `{"network_endpoint_groups":{"80":"k8s1-x"}}`))}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonUnsupportedLoadBalancer,
		},
		{
			name:       "the most specific reason wins when Services are left out for several",
			in:         Input{Services: []corev1.Service{svc("a", families(corev1.IPv6Protocol)), svc("b")}, ServedByOtherPods: map[string]bool{"b": true}, DoormanFamilies: []napwakev1alpha1.IPFamily{v4}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonServedByOtherPods,
			wantInMsg: []string{"a (IPv6, and", "b (another workload's"},
		},
		{
			name:       "a headless Service with 0 ports is left out, not a panic",
			in:         Input{Services: []corev1.Service{svc("api", ports(), func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNoServices,
		},
		{
			name:       "a Service with 0 ports is left out and says so",
			in:         Input{Services: []corev1.Service{svc("api", ports())}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNoServices,
			wantInMsg: []string{"api (no ports)"},
		},
		{
			name:       "duplicate port names leave the Service out with the name",
			in:         Input{Services: []corev1.Service{svc("api", ports(tcp("http", 80), tcp("http", 81)))}},
			wantStatus: metav1.ConditionFalse, wantReason: napwakev1alpha1.ReasonNoServices,
			wantInMsg: []string{`api (duplicate port name "http")`},
		},
		{
			name:       "an unnamed single port is routed with an empty port name",
			in:         Input{Services: []corev1.Service{svc("api", ports(tcp("", 8080)))}},
			wantRoutes: []string{"api//8080/IPv4"},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
		},
		{
			name:       "100 ports are all wanted; the cap is the allocator's business",
			in:         Input{Services: []corev1.Service{svc("api", ports(many...))}},
			wantStatus: metav1.ConditionTrue, wantReason: napwakev1alpha1.ReasonDoormanRouted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.PodLabels = pods
			if in.DoormanFamilies == nil {
				in.DoormanFamilies = []napwakev1alpha1.IPFamily{v4, v6}
			}
			d := Decide(in)
			if tt.wantRoutes != nil {
				var got []string
				for _, r := range d.Routes {
					fs := make([]string, len(r.IPFamilies))
					for i, f := range r.IPFamilies {
						fs[i] = string(f)
					}
					got = append(got, fmt.Sprintf("%s/%s/%d/%s", r.Service, r.PortName, r.Port, strings.Join(fs, ",")))
				}
				if strings.Join(got, " ") != strings.Join(tt.wantRoutes, " ") {
					t.Errorf("routes %v, want %v", got, tt.wantRoutes)
				}
			}
			c := d.Condition(tt.ask, tt.noProbe)
			if c.Status != tt.wantStatus || c.Reason != tt.wantReason {
				t.Errorf("condition %s/%s %q, want %s/%s", c.Status, c.Reason, c.Message, tt.wantStatus, tt.wantReason)
			}
			for _, m := range tt.wantInMsg {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q does not contain %q", c.Message, m)
				}
			}
		})
	}
}

func TestNotPaused(t *testing.T) {
	tests := []struct {
		name       string
		prev       *metav1.Condition
		wantReason string
		wantMsg    string
	}{
		{"with no earlier condition it is plain NotPaused", nil, napwakev1alpha1.ReasonNotPaused, MessageNotPaused},
		{"a routed pause with nothing left out leaves plain NotPaused",
			&metav1.Condition{Reason: napwakev1alpha1.ReasonDoormanRouted, Message: MessageRouted}, napwakev1alpha1.ReasonNotPaused, MessageNotPaused},
		{"ServedByOtherPods at the last pause stays, its message carried over",
			&metav1.Condition{Reason: napwakev1alpha1.ReasonServedByOtherPods, Message: "no Service is routed: api (x)"},
			napwakev1alpha1.ReasonServedByOtherPods, napwakev1alpha1.CarriedOverPrefix + "no Service is routed: api (x)"},
		{"TooManyPorts at the last pause stays",
			&metav1.Condition{Reason: napwakev1alpha1.ReasonTooManyPorts, Message: "m"}, napwakev1alpha1.ReasonTooManyPorts, napwakev1alpha1.CarriedOverPrefix + "m"},
		{"a carried message is not carried twice",
			&metav1.Condition{Reason: napwakev1alpha1.ReasonNodeLocalTraffic, Message: napwakev1alpha1.CarriedOverPrefix + "m"}, napwakev1alpha1.ReasonNodeLocalTraffic, napwakev1alpha1.CarriedOverPrefix + "m"},
		{"Services left out of a routed pause are carried on NotPaused",
			&metav1.Condition{Reason: napwakev1alpha1.ReasonDoormanRouted, Message: MessageRouted + "; not routed: gw (in GKE NEGs: x); " + MessageNoReadinessProbe},
			napwakev1alpha1.ReasonNotPaused, napwakev1alpha1.CarriedOverPrefix + "not routed: gw (in GKE NEGs: x)"},
		{"DoormanUnavailable is not a problem with the Services and is not carried",
			&metav1.Condition{Reason: napwakev1alpha1.ReasonDoormanUnavailable, Message: "m"}, napwakev1alpha1.ReasonNotPaused, MessageNotPaused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NotPaused(tt.prev)
			if c.Status != metav1.ConditionFalse || c.Reason != tt.wantReason || c.Message != tt.wantMsg {
				t.Errorf("got %s %q, want %s %q", c.Reason, c.Message, tt.wantReason, tt.wantMsg)
			}
		})
	}
}

func TestHasReadinessProbe(t *testing.T) {
	none := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
	if HasReadinessProbe(none) {
		t.Error("no probe and no gates: want false")
	}
	probe := none.DeepCopy()
	probe.Spec.Containers[1].ReadinessProbe = &corev1.Probe{}
	gate := none.DeepCopy()
	gate.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "x"}}
	startup := none.DeepCopy()
	startup.Spec.Containers[1].StartupProbe = &corev1.Probe{}
	if !HasReadinessProbe(probe) || !HasReadinessProbe(gate) || !HasReadinessProbe(startup) {
		t.Error("a readiness or startup probe in any container, or a readiness gate: want true")
	}
}

// FuzzParseIgnorePorts reads arbitrary annotation values. It must never
// panic, never ignore a port number outside 1-65535, and always ignore a
// plain number it was given on its own.
func FuzzParseIgnorePorts(f *testing.F) {
	for _, s := range []string{"metrics", "9090", "metrics,9090", " a , ,b,", "0", "65536", "-1", "1e3", "x y", strings.Repeat("a,", 2000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ip, _ := ParseIgnorePorts(s)
		if ip.Ignores("", 0) || ip.Ignores("", 65536) || ip.Ignores("", -1) {
			t.Fatalf("%q ignores a port outside 1-65535", s)
		}
		var n int32
		if _, err := fmt.Sscanf(s, "%d", &n); err == nil && fmt.Sprint(n) == s && n >= 1 && n <= 65535 && !ip.Ignores("", n) {
			t.Fatalf("%q does not ignore port %d", s, n)
		}
	})
}
