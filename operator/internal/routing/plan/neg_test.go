package plan

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// The three NEG markers of "A Service is in NEGs when".
var negMarkers = []struct {
	name      string
	opt       svcOpt
	ingresses []networkingv1.Ingress
}{
	{"a GKE Ingress uses it while it has ingress true", annotate(napwakev1alpha1.AnnotationGKENEG, `{"ingress": true}`), []networkingv1.Ingress{ingress("web", ptr.To("gce"), "api")}},
	{"standalone NEGs (exposed_ports)", annotate(napwakev1alpha1.AnnotationGKENEG, `{"exposed_ports":{"80":{}}}`), nil},
	{"neg-status", annotate(napwakev1alpha1.AnnotationGKENEGStatus, `{"network_endpoint_groups":{"80":"k8s1-x"},"zones":["europe-west1-b"]}`), nil},
}

func TestAServiceInNEGsWithTheForwarderOnIsRoutedThroughItOnItsTargetPort(t *testing.T) {
	target := func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("web") }
	for _, m := range negMarkers {
		t.Run(m.name, func(t *testing.T) {
			in := Input{PodLabels: pods, DoormanFamilies: []napwakev1alpha1.IPFamily{v4}, Forwarder: true, NamedPorts: map[string]int32{"web": 8080},
				Services: []corev1.Service{svc("api", m.opt, target), svc("internal")}, Ingresses: m.ingresses}
			d := Decide(in)
			want := []Want{
				{Service: "api", PortName: "http", Port: 80, IPFamilies: []napwakev1alpha1.IPFamily{v4}, Forwarded: true, TargetPort: 8080},
				{Service: "internal", PortName: "http", Port: 80, IPFamilies: []napwakev1alpha1.IPFamily{v4}},
			}
			if len(d.Routes) != 2 || !equalWant(d.Routes[0], want[0]) || !equalWant(d.Routes[1], want[1]) || len(d.LeftOut) != 0 {
				t.Fatalf("Decide = %+v, left out %+v; want %+v", d.Routes, d.LeftOut, want)
			}
			if c := d.Condition(false, false); c.Reason != napwakev1alpha1.ReasonDoormanRouted || c.Message != MessageRouted {
				t.Fatalf("with a Ready forwarder pod: %+v", c)
			}
			d.ForwarderNotReady = "pod napwake-forwarder-api-x: ErrImagePull"
			c := d.Condition(false, false)
			wantMsg := MessageRouted + "; api routed once the NEG forwarder has a Ready pod: pod napwake-forwarder-api-x: ErrImagePull"
			if c.Status != metav1.ConditionTrue || c.Reason != napwakev1alpha1.ReasonDoormanRouted || c.Message != wantMsg {
				t.Fatalf("with the other Service routed and no Ready forwarder pod: %+v; want True DoormanRouted %q", c, wantMsg)
			}
			d.Routes = d.Routes[:1]
			c = d.Condition(false, false)
			wantMsg = "no Service is routed yet: api wait for the NEG forwarder, which has no Ready pod: pod napwake-forwarder-api-x: ErrImagePull"
			if c.Status != metav1.ConditionFalse || c.Reason != napwakev1alpha1.ReasonForwarderNotReady || c.Message != wantMsg {
				t.Fatalf("with only the forwarded Service: %+v; want False ForwarderNotReady %q", c, wantMsg)
			}
		})
	}
}

func TestAServiceInNEGsWithTheForwarderOffIsUnsupportedLoadBalancer(t *testing.T) {
	for _, m := range negMarkers {
		t.Run(m.name, func(t *testing.T) {
			d := Decide(Input{PodLabels: pods, DoormanFamilies: []napwakev1alpha1.IPFamily{v4}, Services: []corev1.Service{svc("api", m.opt)}, Ingresses: m.ingresses})
			if c := d.Condition(false, false); len(d.Routes) != 0 || c.Reason != napwakev1alpha1.ReasonUnsupportedLoadBalancer {
				t.Fatalf("Decide = %+v, %+v; want nothing routed, UnsupportedLoadBalancer", d.Routes, c)
			}
		})
	}
}

func TestATargetPortNamedByNoContainerPortIsLeftOutOfTheForwarder(t *testing.T) {
	s := svc("api", negMarkers[2].opt, ports(
		corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("nope")},
		corev1.ServicePort{Name: "admin", Port: 81, TargetPort: intstr.FromInt32(9000)},
	))
	d := Decide(Input{PodLabels: pods, DoormanFamilies: []napwakev1alpha1.IPFamily{v4}, Forwarder: true, Services: []corev1.Service{s}})
	if len(d.Routes) != 1 || d.Routes[0].PortName != "admin" || d.Routes[0].TargetPort != 9000 || !d.Routes[0].Forwarded {
		t.Fatalf("routes %+v; want admin forwarded on 9000", d.Routes)
	}
	want := `the forwarder cannot listen on http (targetPort "nope"): no container port of the pods has that name`
	if len(d.LeftOut) != 1 || d.LeftOut[0].Why != want {
		t.Fatalf("left out %+v; want %q", d.LeftOut, want)
	}
}

func TestUnreadableNEGAnnotationsAreNotInNEGsAndSaySo(t *testing.T) {
	tests := []struct {
		name, key, value, want string
	}{
		{"neg that is not JSON", napwakev1alpha1.AnnotationGKENEG, `{"exposed_ports":`, "Service api: reading cloud.google.com/neg: not a JSON object; not counted as in GKE NEGs"},
		{"neg of the wrong shape", napwakev1alpha1.AnnotationGKENEG, `{"exposed_ports":["80"]}`, "Service api: reading cloud.google.com/neg: not the JSON GKE writes: "},
		{"neg with ingress not a boolean", napwakev1alpha1.AnnotationGKENEG, `{"ingress":"true"}`, "Service api: reading cloud.google.com/neg: not the JSON GKE writes: "},
		{"neg that is a list", napwakev1alpha1.AnnotationGKENEG, `[{"ingress":true}]`, "Service api: reading cloud.google.com/neg: not a JSON object"},
		{"neg naming a port the Service lacks", napwakev1alpha1.AnnotationGKENEG, `{"exposed_ports":{"8080":{}}}`, "Service api: cloud.google.com/neg exposed_ports names port 8080, which the Service does not have; not counted as in GKE NEGs"},
		{"neg with a port that is no number", napwakev1alpha1.AnnotationGKENEG, `{"exposed_ports":{"http":{}}}`, `Service api: reading cloud.google.com/neg: exposed_ports: "http" is not a port number`},
		{"neg-status that is not JSON", napwakev1alpha1.AnnotationGKENEGStatus, `network_endpoint_groups=80`, "Service api: reading cloud.google.com/neg-status: not a JSON object"},
		{"neg-status of the wrong shape", napwakev1alpha1.AnnotationGKENEGStatus, `{"network_endpoint_groups":["k8s1-x"]}`, "Service api: reading cloud.google.com/neg-status: not the JSON GKE writes: "},
		{"neg-status without its NEGs", napwakev1alpha1.AnnotationGKENEGStatus, `{"zones":["a"]}`, "Service api: reading cloud.google.com/neg-status: no network_endpoint_groups object"},
		{"neg-status naming a port the Service lacks", napwakev1alpha1.AnnotationGKENEGStatus, `{"network_endpoint_groups":{"443":"k8s1-x"}}`, "Service api: cloud.google.com/neg-status names port 443, which the Service does not have; not counted as in GKE NEGs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, fwd := range []bool{false, true} {
				d := Decide(Input{PodLabels: pods, DoormanFamilies: []napwakev1alpha1.IPFamily{v4}, Forwarder: fwd, Services: []corev1.Service{svc("api", annotate(tt.key, tt.value))}})
				if len(d.Routes) != 1 || d.Routes[0].Forwarded {
					t.Fatalf("forwarder %v: routes %+v; want api routed to the doorman directly", fwd, d.Routes)
				}
				if len(d.Invalid) != 1 || !strings.HasPrefix(d.Invalid[0], tt.want) {
					t.Fatalf("forwarder %v: invalid %q; want one starting %q", fwd, d.Invalid, tt.want)
				}
				if c := d.Condition(false, false); c.Reason != napwakev1alpha1.ReasonDoormanRouted || !strings.Contains(c.Message, d.Invalid[0]) {
					t.Fatalf("forwarder %v: condition %+v; want DoormanRouted naming the bad annotation", fwd, c)
				}
			}
		})
	}
}

func equalWant(a, b Want) bool {
	return a.Service == b.Service && a.PortName == b.PortName && a.Port == b.Port && a.Forwarded == b.Forwarded && a.TargetPort == b.TargetPort &&
		len(a.IPFamilies) == len(b.IPFamilies)
}

// FuzzParseNEG reads arbitrary cloud.google.com/neg values. It must never
// panic; an unreadable value asks for nothing, and a readable one names
// only ports from 1 to 65535, sorted.
func FuzzParseNEG(f *testing.F) {
	for _, s := range []string{"", `{"ingress": true}`, `{"ingress":false}`, `{"exposed_ports":{"80":{}}}`, `{"exposed_ports":{}}`, `{`, `null`, `[]`,
		`{"exposed_ports":{"0":{}}}`, `{"exposed_ports":{"80":1}}`, `{"ingress":"yes"}`, `{"exposed_ports":{"080":{}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseNEG(s)
		if err != nil && (n.Ingress || len(n.ExposedPorts) > 0) {
			t.Fatalf("%q: error %v but asks for %+v", s, err, n)
		}
		checkPorts(t, s, n.ExposedPorts)
	})
}

// FuzzParseNEGStatus reads arbitrary cloud.google.com/neg-status values. It
// must never panic; an unreadable value lists nothing, and a readable one
// names only ports from 1 to 65535, sorted.
func FuzzParseNEGStatus(f *testing.F) {
	for _, s := range []string{"", `{"network_endpoint_groups":{"80":"k8s1-x"},"zones":["a"]}`, `{"network_endpoint_groups":{}}`, `{}`, `null`, `[]`, `{`,
		`{"network_endpoint_groups":{"80":""}}`, `{"network_endpoint_groups":{"99999":"x"}}`, `{"network_endpoint_groups":{"80":1}}`, `{"zones":"a"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseNEGStatus(s)
		if err != nil && len(st.Ports) > 0 {
			t.Fatalf("%q: error %v but lists %v", s, err, st.Ports)
		}
		checkPorts(t, s, st.Ports)
	})
}

func checkPorts(t *testing.T, s string, ps []int32) {
	t.Helper()
	for i, p := range ps {
		if p < 1 || p > 65535 || (i > 0 && ps[i-1] > p) {
			t.Fatalf("%q: ports %v, want sorted ports from 1 to 65535", s, ps)
		}
	}
}
