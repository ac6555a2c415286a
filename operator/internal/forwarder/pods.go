package forwarder

import (
	"fmt"
	"net"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Pod is one address of a Ready forwarder pod, to stand in for the
// workload's pods in a forwarded Service's EndpointSlices: GKE's NEG
// controller looks the pod up by name, checks its UID, address and node
// (docs/compatibility.md).
type Pod struct {
	IP       string
	Family   napwakev1alpha1.IPFamily
	Name     string
	UID      types.UID
	NodeName string
}

// ReadyPods returns every address of the forwarder pods that are Ready, on
// a node, not being deleted and not in a terminal phase (a pod's Ready
// condition can lag its end), sorted by address.
func ReadyPods(pods []corev1.Pod) []Pod {
	var out []Pod
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || !podReady(p) || p.Spec.NodeName == "" ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ips := p.Status.PodIPs
		if len(ips) == 0 && p.Status.PodIP != "" {
			ips = []corev1.PodIP{{IP: p.Status.PodIP}}
		}
		for _, ip := range ips {
			parsed := net.ParseIP(ip.IP)
			if parsed == nil {
				continue
			}
			fam := napwakev1alpha1.IPFamily(corev1.IPv6Protocol)
			if parsed.To4() != nil {
				fam = napwakev1alpha1.IPFamily(corev1.IPv4Protocol)
			}
			out = append(out, Pod{IP: ip.IP, Family: fam, Name: p.Name, UID: p.UID, NodeName: p.Spec.NodeName})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IP < out[j].IP })
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitingReasons are container states that keep a pod from ever becoming
// Ready on its own, worth telling the user.
var waitingReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "CrashLoopBackOff": true, "RunContainerError": true,
}

// NotReady says why no forwarder pod is Ready, "" when one is: the
// Deployment refusing pods (a ReplicaFailure, such as a quota), a pod whose
// image cannot be pulled or that cannot start or be scheduled, or that its
// pods are starting. dep may be nil (not created yet).
func NotReady(dep *appsv1.Deployment, pods []corev1.Pod) string {
	if len(ReadyPods(pods)) > 0 {
		return ""
	}
	var whys []string
	if dep != nil {
		for _, c := range dep.Status.Conditions {
			if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
				whys = append(whys, fmt.Sprintf("Deployment %s: %s: %s", dep.Name, c.Reason, c.Message))
			}
		}
	}
	sorted := append([]corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i := range sorted {
		if why := podWhy(&sorted[i]); why != "" {
			whys = append(whys, why)
		}
	}
	if len(whys) == 0 {
		if len(pods) == 0 {
			return "its pods are not created yet"
		}
		return "its pods are starting"
	}
	return strings.Join(whys, "; ")
}

func podWhy(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && waitingReasons[w.Reason] {
			if w.Message == "" {
				return fmt.Sprintf("pod %s: %s", p.Name, w.Reason)
			}
			return fmt.Sprintf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return fmt.Sprintf("pod %s: %s: %s", p.Name, c.Reason, c.Message)
		}
	}
	return ""
}
