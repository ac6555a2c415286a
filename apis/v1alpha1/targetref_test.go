package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTargetRefGroupVersionKind(t *testing.T) {
	for _, tc := range []struct {
		ref       TargetRef
		want      schema.GroupVersionKind
		ok, apps  bool
		qualified string
	}{
		{TargetRef{Kind: KindDeployment, Name: "api"}, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, true, true, "Deployment"},
		{TargetRef{Kind: KindStatefulSet, Name: "db"}, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, true, true, "StatefulSet"},
		{TargetRef{APIVersion: "apps/v1", Kind: KindDeployment, Name: "api"}, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, true, true, "Deployment"},
		{TargetRef{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web"}, schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}, true, false, "Rollout.argoproj.io"},
		{TargetRef{APIVersion: "example.com/v1", Kind: KindDeployment, Name: "x"}, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Deployment"}, true, false, "Deployment.example.com"},
		{TargetRef{APIVersion: "v1", Kind: "ReplicationController", Name: "rc"}, schema.GroupVersionKind{Version: "v1", Kind: "ReplicationController"}, true, false, "ReplicationController"},
		{TargetRef{Kind: "Rollout", Name: "web"}, schema.GroupVersionKind{}, false, false, "Rollout"},
		{TargetRef{APIVersion: "a/b/c", Kind: "Rollout", Name: "web"}, schema.GroupVersionKind{}, false, false, "Rollout"},
	} {
		got, err := tc.ref.GroupVersionKind()
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%+v.GroupVersionKind() = %v, %v; want %v, ok %v", tc.ref, got, err, tc.want, tc.ok)
		}
		if tc.ref.IsApps() != tc.apps || tc.ref.QualifiedKind() != tc.qualified || tc.ref.String() != tc.qualified+"/"+tc.ref.Name {
			t.Errorf("%+v: IsApps %v QualifiedKind %q String %q; want %v, %q", tc.ref, tc.ref.IsApps(), tc.ref.QualifiedKind(), tc.ref.String(), tc.apps, tc.qualified)
		}
	}
}
