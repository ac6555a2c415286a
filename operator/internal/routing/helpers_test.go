package routing

import (
	"fmt"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

var apiLabels = map[string]string{"app": "api"}

// template is the workload's pod template; probe gives its container a
// readiness probe.
func template(probe bool) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api", "track": "stable"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "api:1"}}},
	}
	if probe {
		t.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstrPort(8080)}}}
	}
	return t
}

// pausing creates a ManagedWorkload in phase Pausing with its pause
// recorded, as the pause/wake core leaves it before calling Route.
func (f *fixture) pausing(name string) *napwakev1alpha1.ManagedWorkload {
	f.t.Helper()
	mw := &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: name}},
	}
	f.create(mw)
	base := mw.DeepCopy()
	mw.Status.Phase = napwakev1alpha1.PhasePausing
	mw.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: metav1.NewTime(f.clock.Now()), Replicas: 2, Reason: napwakev1alpha1.PauseIdle}
	f.g.Expect(k8s.Status().Patch(f.ctx, mw, client.MergeFrom(base))).To(Succeed())
	return mw
}

// withRoutes creates a pausing ManagedWorkload whose status names routes
// and holds, as one routed before (a Router seeds its ports from them).
func (f *fixture) withRoutes(name string, routes []napwakev1alpha1.Route, holds []napwakev1alpha1.PortHold) *napwakev1alpha1.ManagedWorkload {
	f.t.Helper()
	mw := f.pausing(name)
	base := mw.DeepCopy()
	mw.Status.Doorman = &napwakev1alpha1.DoormanStatus{Routes: routes, PortHolds: holds}
	f.g.Expect(k8s.Status().Patch(f.ctx, mw, client.MergeFrom(base))).To(Succeed())
	return mw
}

type svcOpt func(*corev1.Service)

// service creates a Service selecting app=api, one TCP port "http" 80.
func (f *fixture) service(name string, opts ...svcOpt) *corev1.Service {
	f.t.Helper()
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: corev1.ServiceSpec{
			Selector: apiLabels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	f.create(s)
	return s
}

func withPorts(ps ...corev1.ServicePort) svcOpt { return func(s *corev1.Service) { s.Spec.Ports = ps } }

func withFamilies(fs ...corev1.IPFamily) svcOpt {
	return func(s *corev1.Service) {
		s.Spec.IPFamilies = fs
		policy := corev1.IPFamilyPolicySingleStack
		if len(fs) > 1 {
			policy = corev1.IPFamilyPolicyRequireDualStack
		}
		s.Spec.IPFamilyPolicy = &policy
	}
}

func withAnnotation(k, v string) svcOpt {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}

func tcpPorts(n int) []corev1.ServicePort {
	out := make([]corev1.ServicePort, n)
	for i := range out {
		out[i] = corev1.ServicePort{Name: fmt.Sprintf("p%d", i), Port: int32(8000 + i), Protocol: corev1.ProtocolTCP}
	}
	return out
}

// get re-reads the ManagedWorkload.
func (f *fixture) get(mw *napwakev1alpha1.ManagedWorkload) *napwakev1alpha1.ManagedWorkload {
	f.t.Helper()
	out := &napwakev1alpha1.ManagedWorkload{}
	f.g.Expect(k8s.Get(f.ctx, client.ObjectKeyFromObject(mw), out)).To(Succeed())
	return out
}

func wakeOnRequest(mw *napwakev1alpha1.ManagedWorkload) metav1.Condition {
	if c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// slices lists the operator's slices in the test's namespace.
func (f *fixture) slices() []discoveryv1.EndpointSlice {
	f.t.Helper()
	var list discoveryv1.EndpointSliceList
	f.g.Expect(k8s.List(f.ctx, &list, client.InNamespace(f.ns), client.MatchingLabels{
		napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager,
	})).To(Succeed())
	return list.Items
}

func (f *fixture) slice(name string) (*discoveryv1.EndpointSlice, error) {
	s := &discoveryv1.EndpointSlice{}
	err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, s)
	return s, err
}

func sliceNames(ss []discoveryv1.EndpointSlice) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

func endpointIPs(s *discoveryv1.EndpointSlice) []string {
	var out []string
	for _, e := range s.Endpoints {
		out = append(out, e.Addresses...)
	}
	return out
}

// eventReasons lists the reasons of events about the object.
func (f *fixture) eventReasons(o client.Object) []string {
	var list corev1.EventList
	f.g.Expect(k8s.List(f.ctx, &list, client.InNamespace(o.GetNamespace()))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == o.GetName() {
			out = append(out, e.Reason+"/"+e.Type)
		}
	}
	return out
}

func intstrPort(p int) intstr.IntOrString { return intstr.FromInt32(int32(p)) }
