package epslice

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestOwnerOf(t *testing.T) {
	ours := func(workload string) map[string]string {
		return map[string]string{napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager, napwakev1alpha1.LabelWorkload: workload}
	}
	for _, tc := range []struct {
		name      string
		labels    map[string]string
		owner     Owner
		otherName string
	}{
		{"a slice the operator wrote for this workload is mine", ours("api"), Mine, ""},
		{"a slice the operator wrote for another paused workload behind the Service is a sharer's", ours("api-canary"), Sharer, "api-canary"},
		{"a slice of the name another manager wrote is foreign", map[string]string{napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceControllerManager, napwakev1alpha1.LabelWorkload: "api-canary"}, Foreign, ""},
		{"a slice the operator wrote for no workload is foreign", map[string]string{napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager}, Foreign, ""},
		{"a slice with no labels is foreign", nil, Foreign, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}
			owner, other := OwnerOf(s, "api")
			if owner != tc.owner || other != tc.otherName {
				t.Fatalf("OwnerOf = %v, %q; want %v, %q", owner, other, tc.owner, tc.otherName)
			}
		})
	}
}
