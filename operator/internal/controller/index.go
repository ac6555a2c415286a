package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// IndexTargetRef indexes ManagedWorkloads by their target: "<kind>/<name>"
// for apps/v1 Deployments and StatefulSets, "<kind>.<group>/<name>" for
// other kinds (TargetRef.String).
const IndexTargetRef = "spec.targetRef"

// TargetRefKey is the IndexTargetRef value for an apps/v1 Deployment or
// StatefulSet.
func TargetRefKey(kind napwakev1alpha1.TargetKind, name string) string {
	return napwakev1alpha1.TargetRef{Kind: kind, Name: name}.String()
}

// TargetRefKeyOf is the IndexTargetRef value for a target of kind gvk.
func TargetRefKeyOf(gvk schema.GroupVersionKind, name string) string {
	return napwakev1alpha1.TargetRef{APIVersion: gvk.GroupVersion().String(), Kind: napwakev1alpha1.TargetKind(gvk.Kind), Name: name}.String()
}

// IndexManagedWorkloads adds the IndexTargetRef index, which both the
// ManagedWorkload and the opt-in reconcilers list by. The manager calls it
// once, before it sets those reconcilers up: an informer takes an index
// only once.
func IndexManagedWorkloads(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &napwakev1alpha1.ManagedWorkload{}, IndexTargetRef, func(o client.Object) []string {
		mw := o.(*napwakev1alpha1.ManagedWorkload)
		return []string{mw.Spec.TargetRef.String()}
	})
	if err != nil {
		return fmt.Errorf("indexing ManagedWorkloads by %s: %w", IndexTargetRef, err)
	}
	return nil
}

// IndexPodIP indexes Pods by each of their IPs. It is the name of the API
// server's own Pod field selector, so a List by it works against the cache
// (every IP) and against the API server alike (the primary IP).
const IndexPodIP = "status.podIP"

// IndexPods adds the IndexPodIP index, by which napwake.dev/last-request-from
// is mapped to the calling Pod. The manager calls it once, with
// IndexManagedWorkloads.
func IndexPods(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &corev1.Pod{}, IndexPodIP, func(o client.Object) []string {
		p := o.(*corev1.Pod)
		ips := make([]string, 0, len(p.Status.PodIPs))
		for _, ip := range p.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		if len(ips) == 0 && p.Status.PodIP != "" {
			ips = append(ips, p.Status.PodIP)
		}
		return ips
	})
	if err != nil {
		return fmt.Errorf("indexing Pods by %s: %w", IndexPodIP, err)
	}
	return nil
}
