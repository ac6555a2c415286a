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

// Usage is the default activity signal that needs no Prometheus: whether a
// workload's pods are using CPU.
type Usage interface {
	// Available says whether the signal works in this cluster.
	Available(ctx context.Context) bool
	// Busy says whether the pods matching selector in namespace use CPU now.
	Busy(ctx context.Context, namespace string, selector *metav1.LabelSelector) (bool, error)
}

// BusyMilliCPU is the CPU one pod must use for its workload to count as
// busy: 20m, well above what an idle web server or database uses waiting,
// well below what one serving anybody uses.
const BusyMilliCPU = 20

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

// Busy sums each pod's containers' CPU and says whether any pod uses at least BusyMilliCPU.
func (u *MetricsAPIUsage) Busy(ctx context.Context, namespace string, selector *metav1.LabelSelector) (bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return false, fmt.Errorf("reading selector: %w", err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(podMetricsGVK)
	if err := u.Reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return false, fmt.Errorf("listing pod metrics in %s: %w", namespace, err)
	}
	for _, pod := range list.Items {
		containers, _, _ := unstructured.NestedSlice(pod.Object, "containers")
		var milli int64
		for _, c := range containers {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			cpu, _, _ := unstructured.NestedString(m, "usage", "cpu")
			if q, err := resource.ParseQuantity(cpu); err == nil {
				milli += q.MilliValue()
			}
		}
		if milli >= BusyMilliCPU {
			return true, nil
		}
	}
	return false, nil
}

// Queries evaluates spec.activity.prometheus queries (a promquery.Client
// behind a promquery.Cache): a result above zero is activity, and while
// paused it wakes the workload.
type Queries interface {
	// Active runs query and reports whether any value it returns is above
	// zero.
	Active(ctx context.Context, query string) (bool, error)
}
