// Package v1alpha1 holds the napwake.dev/v1alpha1 API: the ManagedWorkload
// type, and the names of every label, annotation, condition and event reason
// Napwake's components share.
//
// It depends on apimachinery and k8s.io/api only, so every component (and
// anyone writing tooling against Napwake) can import it cheaply.
// +kubebuilder:object:generate=true
// +groupName=napwake.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "napwake.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this package's types.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns the GroupResource of a resource in this group.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

// registered lists the types addKnownTypes adds; each type file appends its own.
var registered []runtime.Object

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, registered...)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
