package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Usage is the default activity signal that needs no Prometheus: how much
// CPU a workload's pods use, judged against the workload's own idle level
// (package idlelevel).
type Usage interface {
	// Available says whether the signal works in this cluster.
	Available(ctx context.Context) bool
	// PeakMilliCPU is the CPU, in millicores, the busiest of the pods
	// matching selector in namespace uses now, and how many pods reported.
	PeakMilliCPU(ctx context.Context, namespace string, selector *metav1.LabelSelector) (milli int64, pods int, err error)
}

var podMetricsGVK = schema.GroupVersionKind{Group: "metrics.k8s.io", Version: "v1beta1", Kind: "PodMetricsList"}

// MetricsAPIUsage reads PodMetrics from metrics.k8s.io (metrics-server).
type MetricsAPIUsage struct {
	// Reader lists PodMetrics; it must not be a cache (they cannot be watched).
	Reader client.Reader
	// Discovery tells whether metrics.k8s.io is served.
	Discovery discovery.DiscoveryInterface
	// Clock times the re-check of availability.
	Clock clock.PassiveClock

	mu        sync.Mutex
	checked   time.Time
	available bool
}

var _ Usage = (*MetricsAPIUsage)(nil)

// availabilityRecheck: metrics-server can be installed after the operator.
const availabilityRecheck = 5 * time.Minute

// Available reports whether metrics.k8s.io/v1beta1 serves pods, re-checked
// every few minutes.
func (u *MetricsAPIUsage) Available(ctx context.Context) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.Clock.Now()
	if !u.checked.IsZero() && now.Sub(u.checked) < availabilityRecheck {
		return u.available
	}
	u.checked = now
	u.available = false
	res, err := u.Discovery.ServerResourcesForGroupVersion(podMetricsGVK.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, r := range res.APIResources {
		if r.Name == "pods" {
			u.available = true
		}
	}
	return u.available
}

// PeakMilliCPU sums each pod's containers' CPU and returns the largest sum.
func (u *MetricsAPIUsage) PeakMilliCPU(ctx context.Context, namespace string, selector *metav1.LabelSelector) (int64, int, error) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return 0, 0, fmt.Errorf("reading selector: %w", err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(podMetricsGVK)
	if err := u.Reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return 0, 0, fmt.Errorf("listing pod metrics in %s: %w", namespace, err)
	}
	var peak int64
	for _, pod := range list.Items {
		containers, _, _ := unstructured.NestedSlice(pod.Object, "containers")
		var nano int64 // summed exactly, then rounded down: metrics-server reports nanocores
		for _, c := range containers {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			cpu, _, _ := unstructured.NestedString(m, "usage", "cpu")
			if q, err := resource.ParseQuantity(cpu); err == nil {
				nano += q.ScaledValue(resource.Nano)
			}
		}
		// Rounded down, not up as MilliValue does: an idle pod at 0.05m is
		// 0m, not 1m, or every idle workload would look busy.
		peak = max(peak, nano/1_000_000)
	}
	return peak, len(list.Items), nil
}

// Queries evaluates spec.activity.prometheus queries (a promquery.Client
// behind a promquery.Cache): a result above zero is activity, and while
// paused it wakes the workload.
type Queries interface {
	// Active runs query and reports whether any value it returns is above
	// zero.
	Active(ctx context.Context, query string) (bool, error)
}
