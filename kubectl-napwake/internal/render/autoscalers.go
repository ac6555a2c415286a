package render

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Autoscaler is a HorizontalPodAutoscaler or KEDA ScaledObject that scales
// a workload's target, for describe.
type Autoscaler struct {
	// Kind is HorizontalPodAutoscaler or ScaledObject.
	Kind string
	Name string
	// Min and Max are its replica bounds; nil when unset.
	Min, Max *int64
}

// Scales says whether a scaleTargetRef (an HPA's or a ScaledObject's)
// names target: the same kind (a Deployment when empty, KEDA's default),
// name and API group (apps when apiVersion is empty), whatever the version.
func Scales(apiVersion, kind, name string, target napwakev1alpha1.TargetRef) bool {
	want, err := target.GroupVersionKind()
	if err != nil {
		return false
	}
	if kind == "" {
		kind = string(napwakev1alpha1.KindDeployment)
	}
	group := "apps"
	if apiVersion != "" {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return false
		}
		group = gv.Group
	}
	return name == target.Name && kind == want.Kind && group == want.Group
}

// autoscalersLine names each autoscaler with its bounds: "HorizontalPodAutoscaler/web (1 to 5 replicas)".
func autoscalersLine(as []Autoscaler) string {
	parts := make([]string, 0, len(as))
	for _, a := range as {
		s := a.Kind + "/" + a.Name
		if a.Min != nil || a.Max != nil {
			s += " (" + boundOr(a.Min, "?") + " to " + boundOr(a.Max, "?") + " replicas)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func boundOr(v *int64, unset string) string {
	if v == nil {
		return unset
	}
	return strconv.FormatInt(*v, 10)
}
