package sliceowner

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestByController(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: "api", UID: "u-1", Controller: ptr.To(true)}
	labels := map[string]string{"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io", "kubernetes.io/service-name": "api"}
	with := func(l map[string]string, o ...metav1.OwnerReference) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: l, OwnerReferences: o}}
	}
	relabel := func(k, v string) map[string]string {
		out := map[string]string{}
		for key, val := range labels {
			out[key] = val
		}
		out[k] = v
		return out
	}
	other := owner
	other.Name = "other"
	noUID := owner
	noUID.UID = ""
	notController := owner
	notController.Controller = nil
	cases := []struct {
		name string
		s    *discoveryv1.EndpointSlice
		want bool
	}{
		{"the controller's slice for the Service is", with(labels, owner), true},
		{"a slice another manager labelled is not", with(relabel("endpointslice.kubernetes.io/managed-by", "someone"), owner), false},
		{"a slice of another Service is not", with(relabel("kubernetes.io/service-name", "other"), owner), false},
		{"a slice with the controller's labels and no owner is not (made by hand)", with(labels), false},
		{"a slice owned by another Service is not", with(labels, other), false},
		{"an owner reference without a UID is not the controller's", with(labels, noUID), false},
		{"an owner that is not the controller does not count", with(labels, notController), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ByController(tc.s, "api"); got != tc.want {
				t.Fatalf("ByController = %v, want %v", got, tc.want)
			}
		})
	}
}
