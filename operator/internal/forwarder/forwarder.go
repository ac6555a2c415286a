// Package forwarder decides, without a client or a clock, the shape of the
// NEG forwarder the operator runs beside a paused workload whose Service is
// in GKE network endpoint groups
// (docs/design/doorman.md#the-neg-forwarder): the Deployment
// napwake-forwarder-<workload>, which ports it relays to which doorman
// ports, which of its pods stand in as endpoints, and why none is Ready.
//
// It must not read or write the cluster, nor read the clock: the routing
// shell (operator/internal/routing) gathers its input and applies its output.
package forwarder

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// NamePrefix starts every forwarder Deployment's name.
const NamePrefix = "napwake-forwarder-"

// AnnotationDeleteAfter, on a forwarder Deployment, is the RFC 3339 time
// after which the operator deletes it: set once the workload is awake.
const AnnotationDeleteAfter = "napwake.dev/delete-after"

// Sidecar opt-outs: Istio reads the label (and the older annotation),
// Linkerd the annotation.
const (
	istioInject   = "sidecar.istio.io/inject"
	linkerdInject = "linkerd.io/inject"
)

// sysctlUnprivilegedPortStart lets a non-root process bind below 1024; the
// Pod Security Standards allow it at every level.
const sysctlUnprivilegedPortStart = "net.ipv4.ip_unprivileged_port_start"

// nonRootID is the distroless nonroot user and group.
const nonRootID = 65532

// Name is the forwarder Deployment's name for a workload.
func Name(workload string) string { return NamePrefix + workload }

// Port is one listen port of the forwarder and the doorman port it relays to.
type Port struct {
	// Listen is the Service's target port, where GKE sends traffic.
	Listen int32
	// Doorman is the route's doorman port.
	Doorman int32
}

// Spec is everything the Deployment depends on.
type Spec struct {
	// Namespace and Workload are the ManagedWorkload's; OwnerUID its UID.
	Namespace, Workload string
	OwnerUID            types.UID
	// OperatorNamespace is Napwake's namespace, on the napwake.dev/operator
	// label the chart's doorman NetworkPolicy admits.
	OperatorNamespace string
	// Image is the forwarder image, tagged with forwarder/VERSION.
	Image string
	// DoormanHost is the doorman's headless Service's DNS name,
	// <release>-doorman-pods.<namespace>.svc.
	DoormanHost string
	// Replicas defaults to 2.
	Replicas int32
	// Ports are what it listens on and relays to; see Ports.
	Ports []Port
	// MaxWait is the workload's wake.maxWait (0: the default): see
	// IdleTimeout.
	MaxWait time.Duration
}

// defaultIdleTimeout is the forwarder's own limit on a relayed connection
// that carries nothing either way, the doorman's (docs/compatibility.md).
const defaultIdleTimeout = 10 * time.Minute

// IdleTimeout is the forwarder's limit on a relayed connection that
// carries nothing either way, for a workload whose wake.maxWait is
// maxWait: 10 minutes, or a minute past maxWait when that is longer, so a
// request the doorman holds, silent both ways until the workload answers,
// is never cut by the forwarder first.
func IdleTimeout(maxWait time.Duration) time.Duration {
	if maxWait <= 0 {
		maxWait = napwakev1alpha1.DefaultMaxWait
	}
	return max(defaultIdleTimeout, min(maxWait, napwakev1alpha1.MaxMaxWait)+time.Minute)
}

// Ports sorts and dedupes listen ports: two routes with the same target
// port share one listener, relayed to the lower doorman port (both wake
// the same workload).
func Ports(ps []Port) []Port {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(a, b Port) int {
		if a.Listen != b.Listen {
			return int(a.Listen - b.Listen)
		}
		return int(a.Doorman - b.Doorman)
	})
	return slices.CompactFunc(out, func(a, b Port) bool { return a.Listen == b.Listen })
}

// SelectorLabels select one workload's forwarder pods.
func SelectorLabels(operatorNamespace, workload string) map[string]string {
	return map[string]string{
		napwakev1alpha1.LabelAppName:  napwakev1alpha1.AppNameForwarder,
		napwakev1alpha1.LabelOperator: operatorNamespace,
		napwakev1alpha1.LabelWorkload: workload,
	}
}

// Labels are on the Deployment and its pods: the selector's, the
// napwake.dev/ignore that keeps Napwake from managing it in an opted-in
// namespace, and Istio's opt-out.
func Labels(operatorNamespace, workload string) map[string]string {
	l := SelectorLabels(operatorNamespace, workload)
	l[napwakev1alpha1.LabelIgnore] = "true"
	l[istioInject] = "false"
	return l
}

// healthPort is where /healthz and /readyz listen: 8081, or the first port
// above it that the forwarder doesn't relay.
func healthPort(ps []Port) int32 {
	p := int32(8081)
	for slices.ContainsFunc(ps, func(x Port) bool { return x.Listen == p }) {
		p++
	}
	return p
}

// Deployment is the forwarder's Deployment for s: two small pods spread
// across nodes, the namespace's default ServiceAccount without its token,
// the Pod Security Standards' restricted level, no sidecars, listening on
// the target ports (below 1024 through the unprivileged-port sysctl, never
// as root), Ready only while it reaches the doorman on every port.
func Deployment(s Spec) *appsv1.Deployment {
	ps := Ports(s.Ports)
	replicas := s.Replicas
	if replicas <= 0 {
		replicas = 2
	}
	health := healthPort(ps)
	args := []string{"--doorman-host=" + s.DoormanHost, "", fmt.Sprintf("--health-probe-bind-address=:%d", health)}
	if idle := IdleTimeout(s.MaxWait); idle != defaultIdleTimeout {
		args = append(args, "--idle-timeout="+idle.String())
	}
	forwards := make([]string, len(ps))
	containerPorts := make([]corev1.ContainerPort, 0, len(ps)+1)
	lowest := int32(1024)
	for i, p := range ps {
		forwards[i] = fmt.Sprintf("%d=%d", p.Listen, p.Doorman)
		containerPorts = append(containerPorts, corev1.ContainerPort{ContainerPort: p.Listen, Protocol: corev1.ProtocolTCP})
		lowest = min(lowest, p.Listen)
	}
	args[1] = "--forward=" + strings.Join(forwards, ",")
	containerPorts = append(containerPorts, corev1.ContainerPort{Name: "health", ContainerPort: health, Protocol: corev1.ProtocolTCP})
	podSC := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](nonRootID),
		RunAsGroup:     ptr.To[int64](nonRootID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if lowest < 1024 {
		podSC.Sysctls = []corev1.Sysctl{{Name: sysctlUnprivilegedPortStart, Value: strconv.Itoa(int(lowest))}}
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("health")}},
			PeriodSeconds: 5, TimeoutSeconds: 3, FailureThreshold: 3, SuccessThreshold: 1,
		}
	}
	labels := Labels(s.OperatorNamespace, s.Workload)
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: Name(s.Workload), Namespace: s.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: napwakev1alpha1.GroupVersion.String(), Kind: "ManagedWorkload",
				Name: s.Workload, UID: s.OwnerUID, Controller: ptr.To(true),
			}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: SelectorLabels(s.OperatorNamespace, s.Workload)},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1)),
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      labels,
					Annotations: map[string]string{istioInject: "false", linkerdInject: "disabled"},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName:            "default",
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
					SecurityContext:               podSC,
					TerminationGracePeriodSeconds: ptr.To[int64](45),
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
						LabelSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels(s.OperatorNamespace, s.Workload)},
					}},
					Containers: []corev1.Container{{
						Name:           "forwarder",
						Image:          s.Image,
						Args:           args,
						Ports:          containerPorts,
						ReadinessProbe: probe("/readyz"),
						LivenessProbe:  probe("/healthz"),
						Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							ReadOnlyRootFilesystem:   ptr.To(true),
							RunAsNonRoot:             ptr.To(true),
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
				},
			},
		},
	}
}
