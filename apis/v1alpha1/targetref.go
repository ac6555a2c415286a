package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AppsV1 is the group/version Deployment and StatefulSet mean when a
// TargetRef names no apiVersion.
const AppsV1 = "apps/v1"

// GroupVersionKind is the kind ref names: apps/v1 for Deployment and
// StatefulSet without an apiVersion (objects written before apiVersion
// existed), else ref.APIVersion's. It fails for another kind without an
// apiVersion (the CRD's CEL rule refuses those) or an unreadable one.
func (ref TargetRef) GroupVersionKind() (schema.GroupVersionKind, error) {
	av := ref.APIVersion
	if av == "" {
		if !ref.IsApps() {
			return schema.GroupVersionKind{}, fmt.Errorf("targetRef.apiVersion is required for kind %s", ref.Kind)
		}
		av = AppsV1
	}
	gv, err := schema.ParseGroupVersion(av)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("targetRef.apiVersion %q: %w", av, err)
	}
	return gv.WithKind(string(ref.Kind)), nil
}

// IsApps says whether ref is an apps/v1 Deployment or StatefulSet, the
// kinds the operator knows without --target-kinds.
func (ref TargetRef) IsApps() bool {
	if ref.Kind != KindDeployment && ref.Kind != KindStatefulSet {
		return false
	}
	return ref.APIVersion == "" || ref.APIVersion == AppsV1
}

// QualifiedKind is "Deployment" or "StatefulSet" for the apps/v1 kinds and
// kind.group ("Rollout.argoproj.io") for others, as kubectl names them.
func (ref TargetRef) QualifiedKind() string {
	if ref.IsApps() {
		return string(ref.Kind)
	}
	gvk, err := ref.GroupVersionKind()
	if err != nil || gvk.Group == "" {
		return string(ref.Kind)
	}
	return string(ref.Kind) + "." + gvk.Group
}

// String is QualifiedKind/name: "Deployment/api", "Rollout.argoproj.io/web".
func (ref TargetRef) String() string {
	return ref.QualifiedKind() + "/" + ref.Name
}
