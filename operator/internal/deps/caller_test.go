package deps

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// pod is a Running Pod of p/api's ManagedWorkload that has had ip since a
// minute before t0.
func pod(name, ip string, change func(*Pod)) Pod {
	p := Pod{
		Key: key("p/" + name), IPs: []string{ip}, Phase: corev1.PodRunning,
		IPSince: t0.Add(-time.Minute), Workload: key("p/api"),
	}
	if change != nil {
		change(&p)
	}
	return p
}

func TestCallerOf(t *testing.T) {
	callee := key("p/db")
	for _, tc := range []struct {
		name string
		from string
		at   time.Time
		pods []Pod
		want Caller
	}{
		{
			name: "a Running Pod that had the address before the request is the caller",
			from: "10.0.0.5", at: t0,
			pods: []Pod{pod("other", "10.0.0.6", nil), pod("api-1", "10.0.0.5", nil)},
			want: Caller{Workload: key("p/api"), Pod: key("p/api-1")},
		},
		{
			name: "an IPv6 Pod matches its second address, and a mapped IPv4 address its IPv4 one",
			from: "::ffff:10.0.0.5", at: t0,
			pods: []Pod{pod("api-1", "fd00::5", func(p *Pod) { p.IPs = append(p.IPs, "10.0.0.5") })},
			want: Caller{Workload: key("p/api"), Pod: key("p/api-1")},
		},
		{
			name: "a Pod that got the address in the request's second counts",
			from: "10.0.0.5", at: t0.Add(900 * time.Millisecond),
			pods: []Pod{pod("api-1", "10.0.0.5", func(p *Pod) { p.IPSince = t0 })},
			want: Caller{Workload: key("p/api"), Pod: key("p/api-1")},
		},
		{
			name: "a reused address teaches nothing: the Pod holding it now got it after the request",
			from: "10.0.0.5", at: t0.Add(-2 * time.Minute),
			pods: []Pod{pod("api-2", "10.0.0.5", nil)},
			want: Caller{Why: WhyNoPod},
		},
		{
			name: "beside a deleted Pod that still lists it, the new holder is the caller if it had it in time",
			from: "10.0.0.5", at: t0,
			pods: []Pod{pod("old", "10.0.0.5", func(p *Pod) { p.Deleting, p.Workload = true, key("p/web") }), pod("api-1", "10.0.0.5", nil)},
			want: Caller{Workload: key("p/api"), Pod: key("p/api-1")},
		},
		{
			name: "a host-network Pod's address is the node's and teaches nothing",
			from: "192.168.1.10", at: t0,
			pods: []Pod{pod("proxy", "192.168.1.10", func(p *Pod) { p.HostNetwork = true })},
			want: Caller{Why: WhyNoPod},
		},
		{
			name: "an address no Pod holds (a load balancer's) teaches nothing",
			from: "34.120.0.1", at: t0,
			pods: []Pod{pod("api-1", "10.0.0.5", nil)},
			want: Caller{Why: WhyNoPod},
		},
		{
			name: "two Pods that both qualify teach nothing",
			from: "10.0.0.5", at: t0,
			pods: []Pod{pod("api-1", "10.0.0.5", nil), pod("api-2", "10.0.0.5", nil)},
			want: Caller{Why: WhyAmbiguous},
		},
		{
			name: "the same Pod listed twice is still one Pod",
			from: "10.0.0.5", at: t0,
			pods: []Pod{pod("api-1", "10.0.0.5", nil), pod("api-1", "10.0.0.5", nil)},
			want: Caller{Workload: key("p/api"), Pod: key("p/api-1")},
		},
		{name: "garbage teaches nothing", from: "10.0.0.5:8080", at: t0, want: Caller{Why: WhyNotAnAddress}},
		{name: "an empty address teaches nothing", at: t0, want: Caller{Why: WhyNotAnAddress}},
		{name: "loopback teaches nothing", from: "127.0.0.1", at: t0, want: Caller{Why: WhyNotAnAddress}},
		{name: "the unspecified address teaches nothing", from: "::", at: t0, want: Caller{Why: WhyNotAnAddress}},
		{
			name: "no request time teaches nothing",
			from: "10.0.0.5",
			pods: []Pod{pod("api-1", "10.0.0.5", nil)},
			want: Caller{Why: WhyNoTime},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CallerOf(tc.from, tc.at, callee, tc.pods)
			eq(t, "caller", got, tc.want)
			eq(t, "found", got.Found(), tc.want.Why == "")
		})
	}
}

// One Pod at the address, Running and certainly holding it but for one
// thing, teaches nothing; from some the Pod is still named, for logs.
func TestCallerOfLearnsNothingFromAPodThat(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*Pod)
		want   Caller
	}{
		"is being deleted (it may have freed the address)": {func(p *Pod) { p.Deleting = true }, Caller{Why: WhyNoPod}},
		"is not Running":                                 {func(p *Pod) { p.Phase = corev1.PodPending }, Caller{Why: WhyNoPod}},
		"has no known time it had the address":           {func(p *Pod) { p.IPSince = time.Time{} }, Caller{Why: WhyNoPod}},
		"got the address a second after the request":     {func(p *Pod) { p.IPSince = t0.Add(time.Second) }, Caller{Why: WhyNoPod}},
		"is a forwarder's":                               {func(p *Pod) { p.Forwarder = true }, Caller{Pod: key("p/x"), Why: WhyForwarder}},
		"has no ManagedWorkload (an ingress controller)": {func(p *Pod) { p.Workload = Key{} }, Caller{Pod: key("p/x"), Why: WhyNotManaged}},
		"is the callee's own":                            {func(p *Pod) { p.Workload = key("p/db") }, Caller{Pod: key("p/x"), Why: WhySelf}},
	} {
		t.Run(name, func(t *testing.T) {
			eq(t, "caller", CallerOf("10.0.0.5", t0, key("p/db"), []Pod{pod("x", "10.0.0.5", tc.change)}), tc.want)
		})
	}
}

func TestPodFrom(t *testing.T) {
	sec := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "api-1", Labels: map[string]string{napwakev1alpha1.LabelAppName: "api"}},
		Spec:       corev1.PodSpec{HostNetwork: true},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIP:  "10.0.0.5",
			PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}},
			ContainerStatuses: []corev1.ContainerStatus{
				{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: sec(9)}}},
				{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: sec(4)}}},
				{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}},
			},
		},
	}
	eq(t, "from containers", PodFrom(p, key("p/api")), Pod{
		Key: key("p/api-1"), IPs: []string{"10.0.0.5", "fd00::5"}, Phase: corev1.PodRunning,
		IPSince: t0.Add(4 * time.Second), HostNetwork: true, Workload: key("p/api"),
	})
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: sec(20)},
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: sec(2)},
	}
	p.Status.PodIPs = nil
	now := metav1.NewTime(t0)
	p.DeletionTimestamp = &now
	p.Labels[napwakev1alpha1.LabelAppName] = napwakev1alpha1.AppNameForwarder
	got := PodFrom(p, Key{})
	eq(t, "from the sandbox condition", got.IPSince, t0.Add(2*time.Second))
	eq(t, "podIP when podIPs is empty", got.IPs, []string{"10.0.0.5"})
	eq(t, "deleting", got.Deleting, true)
	eq(t, "forwarder", got.Forwarder, true)
}
