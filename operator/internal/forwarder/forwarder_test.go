package forwarder

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestTheDeploymentHasTheShapeTheSpecNames(t *testing.T) {
	tests := []struct {
		name   string
		golden string
		spec   Spec
	}{
		{
			name:   "ports at and above 1024 need no sysctl",
			golden: "high-ports.yaml",
			spec: Spec{Namespace: "preview-42", Workload: "api", OwnerUID: "uid-1", OperatorNamespace: "napwake-system",
				Image: "ghcr.io/napwake/napwake-forwarder:v0.1.0", DoormanHost: "napwake-doorman-pods.napwake-system.svc",
				Ports: []Port{{Listen: 9090, Doorman: 20001}, {Listen: 8080, Doorman: 20000}}},
		},
		{
			name:   "a port below 1024 sets ip_unprivileged_port_start to it, a shared target port relays to the lower doorman port, the health port moves off a relayed 8081",
			golden: "low-ports.yaml",
			spec: Spec{Namespace: "shop", Workload: "web", OwnerUID: "uid-2", OperatorNamespace: "napwake",
				Image: "registry.local/napwake-forwarder:v0.1.0", DoormanHost: "nw-doorman-pods.napwake.svc", Replicas: 3,
				Ports: []Port{{Listen: 8081, Doorman: 20007}, {Listen: 80, Doorman: 20005}, {Listen: 443, Doorman: 20006}, {Listen: 80, Doorman: 20004}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := yaml.Marshal(Deployment(tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("Deployment differs from %s (go test -update rewrites it):\n%s", path, got)
			}
		})
	}
}

func ready(name, ip string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{PodIP: ip,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func waiting(name, reason, msg string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{
		ContainerStatuses: []corev1.ContainerStatus{{Name: "forwarder", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}}}
}

func TestNotReadySaysWhyNoForwarderPodIsReady(t *testing.T) {
	quota := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "napwake-forwarder-api"}, Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message: `pods "napwake-forwarder-api-7d9-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`,
	}}}}
	unschedulable := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}}}
	tests := []struct {
		name string
		dep  *appsv1.Deployment
		pods []corev1.Pod
		want string
	}{
		{"one Ready pod is enough", nil, []corev1.Pod{ready("a", "10.0.0.5"), waiting("b", "ImagePullBackOff", "")}, ""},
		{"no Deployment yet and no pods", nil, nil, "its pods are not created yet"},
		{"pods without a known trouble are starting", nil, []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}, "its pods are starting"},
		{"an image that cannot be pulled is named with the kubelet's message", nil, []corev1.Pod{
			waiting("b", "ImagePullBackOff", `Back-off pulling image "nope:v1"`), waiting("a", "ErrImagePull", "not found"),
		}, `pod a: ErrImagePull: not found; pod b: ImagePullBackOff: Back-off pulling image "nope:v1"`},
		{"a quota refusing its pods is the Deployment's ReplicaFailure", quota, nil,
			`Deployment napwake-forwarder-api: FailedCreate: pods "napwake-forwarder-api-7d9-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`},
		{"an unschedulable pod says so", nil, []corev1.Pod{unschedulable}, "pod b: Unschedulable: 0/3 nodes are available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NotReady(tt.dep, tt.pods); got != tt.want {
				t.Fatalf("NotReady = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadyPodsAreTheReadyPodsAddressesNotTheDeletedOnes(t *testing.T) {
	gone := ready("c", "10.0.0.3")
	gone.DeletionTimestamp = &metav1.Time{}
	dual := ready("d", "")
	dual.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.4"}, {IP: "fd00::4"}}
	dual.Spec.NodeName = "n1"
	got := ReadyPods([]corev1.Pod{ready("b", "10.0.0.9"), gone, waiting("a", "ErrImagePull", ""), dual})
	want := []Pod{{IP: "10.0.0.4", Family: "IPv4", Name: "d", NodeName: "n1"}, {IP: "10.0.0.9", Family: "IPv4", Name: "b"}, {IP: "fd00::4", Family: "IPv6", Name: "d", NodeName: "n1"}}
	if len(got) != len(want) {
		t.Fatalf("ReadyPods = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ReadyPods = %+v, want %+v", got, want)
		}
	}
}
