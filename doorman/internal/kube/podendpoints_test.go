package kube

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"napwake.dev/doorman/internal/addr"
)

// service is the Service "api" in ns selecting app=api, its port "http"
// 80 sending to target.
func service(target intstr.IntOrString) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
			Ports: []corev1.ServicePort{
				{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9091)},
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: target},
			}}}
}

// readyPodOf is a Pod of ns labelled app=api, Ready, serving "web" on
// 8080 (TCP) and "dns" on 5353 (UDP), at ips.
func readyPodOf(name string, ips ...string) *corev1.Pod {
	p := pod(name, "u-"+name, ips...)
	p.Labels = map[string]string{"app": "api", "pod-template-hash": "abc"}
	p.Spec.Containers = []corev1.Container{
		{Name: "dns", Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP}}},
		{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}},
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}
	return p
}

func TestPodEndpoints(t *testing.T) {
	rules := addr.Rules{Self: []netip.Addr{netip.MustParseAddr("10.0.0.7")}}
	want := func(s ...string) []netip.AddrPort {
		var out []netip.AddrPort
		for _, a := range s {
			out = append(out, netip.MustParseAddrPort(a))
		}
		return out
	}
	with := func(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod { f(p); return p }
	svcWith := func(s *corev1.Service, f func(*corev1.Service)) *corev1.Service { f(s); return s }
	named, numeric := intstr.FromString("web"), intstr.FromInt32(8081)
	cases := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		port string
		want []netip.AddrPort
	}{
		{"a named targetPort is the pod's container port of that name", service(named), []*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "http", want("10.244.1.5:8080")},
		{"a numeric targetPort is used as is", service(numeric), []*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "http", want("10.244.1.5:8081")},
		{"an unset targetPort is the Service port", service(intstr.IntOrString{}), []*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "http", want("10.244.1.5:80")},
		{"the route's port name picks the Service port", service(named), []*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "metrics", want("10.244.1.5:9091")},
		{"a port name the Service lacks gives nothing", service(named), []*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "grpc", nil},
		{"a targetPort name no container has gives nothing", service(intstr.FromString("grpc")), []*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "http", nil},
		{"a targetPort name on a UDP container port gives nothing", service(intstr.FromString("dns")), []*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "http", nil},
		{"a sidecar's named port counts", service(intstr.FromString("proxy")), []*corev1.Pod{with(readyPodOf("api-1", "10.244.1.5"), func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "envoy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}}}}
		})}, "http", want("10.244.1.5:15001")},
		{"a one-off init container's named port does not", service(intstr.FromString("proxy")), []*corev1.Pod{with(readyPodOf("api-1", "10.244.1.5"), func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "setup", Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}}}}
		})}, "http", nil},
		{"a UDP Service port gives nothing", svcWith(service(named), func(s *corev1.Service) { s.Spec.Ports[1].Protocol = corev1.ProtocolUDP }),
			[]*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "http", nil},
		{"a pod the selector does not select is refused", service(named), []*corev1.Pod{with(readyPodOf("other", "10.244.1.5"), func(p *corev1.Pod) { p.Labels["app"] = "web" })}, "http", nil},
		{"a pod without labels is refused", service(named), []*corev1.Pod{with(readyPodOf("other", "10.244.1.5"), func(p *corev1.Pod) { p.Labels = nil })}, "http", nil},
		{"a pod in another namespace is refused", service(named), []*corev1.Pod{with(readyPodOf("api-1", "10.244.1.5"), func(p *corev1.Pod) { p.Namespace = "other-tenant" })}, "http", nil},
		{"a pod Ready=False is refused", service(named), []*corev1.Pod{with(readyPodOf("api-1", "10.244.1.5"), func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionFalse })}, "http", nil},
		{"a pod Ready=Unknown is refused", service(named), []*corev1.Pod{with(readyPodOf("api-1", "10.244.1.5"), func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionUnknown })}, "http", nil},
		{"a pod without a Ready condition is refused", service(named), []*corev1.Pod{with(readyPodOf("api-1", "10.244.1.5"), func(p *corev1.Pod) { p.Status.Conditions = p.Status.Conditions[:1] })}, "http", nil},
		{"a terminating pod is refused", service(named), []*corev1.Pod{with(readyPodOf("api-1", "10.244.1.5"), func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) })}, "http", nil},
		{"a finished pod is refused", service(named), []*corev1.Pod{with(readyPodOf("api-1", "10.244.1.5"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })}, "http", nil},
		{"only status.podIPs count, not status.podIP", service(named), []*corev1.Pod{with(readyPodOf("api-1"), func(p *corev1.Pod) { p.Status.PodIP = "10.244.1.5" })}, "http", nil},
		{"a pod without an address gives nothing", service(named), []*corev1.Pod{readyPodOf("api-1")}, "http", nil},
		{"an unreadable address is skipped", service(named), []*corev1.Pod{readyPodOf("api-1", "not-an-ip", "10.244.1.5")}, "http", want("10.244.1.5:8080")},
		{"a Service without a selector gets nothing from pods", svcWith(service(named), func(s *corev1.Service) { s.Spec.Selector = nil }),
			[]*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "http", nil},
		{"an ExternalName Service gets nothing", svcWith(service(named), func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }),
			[]*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "http", nil},
		{"no Service, nothing", nil, []*corev1.Pod{readyPodOf("api-1", "10.244.1.5")}, "http", nil},
		{"IPv6 and dual-stack pods give each address", service(named), []*corev1.Pod{readyPodOf("api-1", "10.244.1.5", "fd00:10::5"), readyPodOf("api-2", "fd00:10::6")},
			"http", want("10.244.1.5:8080", "[fd00:10::5]:8080", "[fd00:10::6]:8080")},
		{"only the families the Service serves", svcWith(service(named), func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} }),
			[]*corev1.Pod{readyPodOf("api-1", "10.244.1.5", "fd00:10::5")}, "http", want("[fd00:10::5]:8080")},
		{"loopback is refused", service(named), []*corev1.Pod{readyPodOf("lo", "127.0.0.1")}, "http", nil},
		{"a mapped loopback address is refused", service(named), []*corev1.Pod{readyPodOf("mapped", "::ffff:127.0.0.1")}, "http", nil},
		{"a metadata address is refused", service(named), []*corev1.Pod{readyPodOf("meta", "169.254.169.254")}, "http", nil},
		{"the doorman's own address is refused", service(named), []*corev1.Pod{readyPodOf("self", "10.0.0.7")}, "http", nil},
		{"duplicates are dropped, sorted", service(named), []*corev1.Pod{readyPodOf("api-2", "10.244.1.6"), readyPodOf("api-1", "10.244.1.5", "10.244.1.5"), nil},
			"http", want("10.244.1.5:8080", "10.244.1.6:8080")},
		{"of several pods only the ones allowed", service(named), []*corev1.Pod{
			readyPodOf("api-1", "10.244.1.5"),
			with(readyPodOf("api-2", "10.244.1.6"), func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionFalse }),
			with(readyPodOf("db", "10.244.1.7"), func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }),
		}, "http", want("10.244.1.5:8080")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodEndpoints(tc.svc, tc.pods, tc.port, rules); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			// The same, as the cache holds them: trimmed.
			var svc *corev1.Service
			if tc.svc != nil {
				o, err := trimService(tc.svc.DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				svc = o.(*corev1.Service)
			}
			pods := make([]*corev1.Pod, len(tc.pods))
			for i, p := range tc.pods {
				if p == nil {
					continue
				}
				o, err := trimPod(p.DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				pods[i] = o.(*corev1.Pod)
			}
			if got := PodEndpoints(svc, pods, tc.port, rules); !slices.Equal(got, tc.want) {
				t.Fatalf("trimmed as cached: got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMergeEndpoints(t *testing.T) {
	a := []netip.AddrPort{netip.MustParseAddrPort("10.244.1.6:80"), netip.MustParseAddrPort("10.244.1.5:80")}
	b := []netip.AddrPort{netip.MustParseAddrPort("10.244.1.5:80"), netip.MustParseAddrPort("[fd00::1]:80"), netip.MustParseAddrPort("10.244.1.4:80")}
	got := MergeEndpoints(a, b)
	want := []netip.AddrPort{netip.MustParseAddrPort("10.244.1.4:80"), netip.MustParseAddrPort("10.244.1.5:80"), netip.MustParseAddrPort("10.244.1.6:80"), netip.MustParseAddrPort("[fd00::1]:80")}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if a[0] != netip.MustParseAddrPort("10.244.1.6:80") {
		t.Fatal("MergeEndpoints changed its input")
	}
	if got := MergeEndpoints(nil, nil); len(got) != 0 {
		t.Fatalf("got %v from nothing", got)
	}
}
