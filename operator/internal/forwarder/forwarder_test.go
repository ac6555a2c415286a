package forwarder

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// ready is a Ready pod on node n-<name>, its UID uid-<name>.
func ready(name, ip string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Spec: corev1.PodSpec{NodeName: "n-" + name},
		Status: corev1.PodStatus{PodIP: ip, Phase: corev1.PodRunning,
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

// TestReadyPodsAreTheReadyPodsAddressesNotTheDeletedOnes: each address of
// a Ready pod, with the pod's name, UID and node (what GKE's NEG
// controller checks, docs/compatibility.md); not a pod being deleted, nor
// one that has ended while its Ready condition still says True, nor one
// without a node or an address.
func TestReadyPodsAreTheReadyPodsAddressesNotTheDeletedOnes(t *testing.T) {
	gone := ready("c", "10.0.0.3")
	gone.DeletionTimestamp = &metav1.Time{}
	failed := ready("e", "10.0.0.5")
	failed.Status.Phase = corev1.PodFailed
	succeeded := ready("f", "10.0.0.6")
	succeeded.Status.Phase = corev1.PodSucceeded
	unscheduled := ready("g", "10.0.0.7")
	unscheduled.Spec.NodeName = ""
	dual := ready("d", "")
	dual.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.4"}, {IP: "fd00::4"}}
	got := ReadyPods([]corev1.Pod{ready("b", "10.0.0.9"), gone, waiting("a", "ErrImagePull", ""), dual, failed, succeeded, unscheduled, ready("h", "")})
	want := []Pod{{IP: "10.0.0.4", Family: "IPv4", Name: "d", UID: "uid-d", NodeName: "n-d"}, {IP: "10.0.0.9", Family: "IPv4", Name: "b", UID: "uid-b", NodeName: "n-b"},
		{IP: "fd00::4", Family: "IPv6", Name: "d", UID: "uid-d", NodeName: "n-d"}}
	if len(got) != len(want) {
		t.Fatalf("ReadyPods = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ReadyPods = %+v, want %+v", got, want)
		}
	}
}

// TestTheForwardersIdleLimitNeverCutsAHeldRequestFirst: 10 minutes, the
// doorman's, unless the workload's wake.maxWait holds a silent request
// longer: then a minute past it (maxWait capped as the API caps it).
func TestTheForwardersIdleLimitNeverCutsAHeldRequestFirst(t *testing.T) {
	for _, c := range []struct {
		maxWait, want time.Duration
		arg           string
	}{
		{0, 10 * time.Minute, ""},
		{2 * time.Minute, 10 * time.Minute, ""},
		{9 * time.Minute, 10 * time.Minute, ""},
		{30 * time.Minute, 31 * time.Minute, "--idle-timeout=31m0s"},
		{3 * time.Hour, 61 * time.Minute, "--idle-timeout=1h1m0s"},
	} {
		if got := IdleTimeout(c.maxWait); got != c.want {
			t.Errorf("IdleTimeout(%s) = %s, want %s", c.maxWait, got, c.want)
		}
		args := Deployment(Spec{Workload: "api", Ports: []Port{{Listen: 8080, Doorman: 20000}}, MaxWait: c.maxWait}).Spec.Template.Spec.Containers[0].Args
		var idleArgs []string
		for _, a := range args {
			if strings.HasPrefix(a, "--idle-timeout") {
				idleArgs = append(idleArgs, a)
			}
		}
		if want := []string{c.arg}; (c.arg == "" && len(idleArgs) != 0) || (c.arg != "" && !slices.Equal(idleArgs, want)) {
			t.Errorf("maxWait %s: args %v, want %q", c.maxWait, args, c.arg)
		}
	}
}
