package testenv

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The test kinds of other workloads (docs/pause.md#other-kinds-of-workload),
// in group test.napwake.dev, version v1:
//
//   - ScalableApp has a scale subresource (spec.replicas, status.replicas,
//     status.selector) and a pod template, as an Argo Rollout has.
//   - NoScaleApp has no scale subresource.
//   - NoSelectorApp has a scale subresource without a labelSelectorPath.
//
// No controller runs them: FollowScalableApp plays one.
var (
	ScalableAppGVK   = schema.GroupVersionKind{Group: "test.napwake.dev", Version: "v1", Kind: "ScalableApp"}
	NoScaleAppGVK    = schema.GroupVersionKind{Group: "test.napwake.dev", Version: "v1", Kind: "NoScaleApp"}
	NoSelectorAppGVK = schema.GroupVersionKind{Group: "test.napwake.dev", Version: "v1", Kind: "NoSelectorApp"}
)

// LateAppGVK is a kind like ScalableApp, in a group of its own, that no
// test installs up front: InstallLateAppCRD installs it while an operator
// runs, as a CRD installed after the operator started.
var LateAppGVK = schema.GroupVersionKind{Group: "late.test.napwake.dev", Version: "v1", Kind: "LateApp"}

// InstallLateAppCRD installs LateApp's CRD and waits until it is served.
func InstallLateAppCRD(cfg *rest.Config) error {
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		scalableCRD(LateAppGVK, &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptrTo(".status.selector"),
		}),
	}})
	return err
}

var installScalable sync.Once
var errScalable error

// InstallScalableCRDs installs the test kinds' CRDs once per test binary
// and waits until they are served.
func InstallScalableCRDs(cfg *rest.Config) error {
	installScalable.Do(func() {
		_, errScalable = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{
			scalableCRD(ScalableAppGVK, &apiextensionsv1.CustomResourceSubresourceScale{
				SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptrTo(".status.selector"),
			}),
			scalableCRD(NoScaleAppGVK, nil),
			scalableCRD(NoSelectorAppGVK, &apiextensionsv1.CustomResourceSubresourceScale{
				SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
			}),
		}})
	})
	return errScalable
}

func ptrTo[T any](v T) *T { return &v }

func scalableCRD(gvk schema.GroupVersionKind, scale *apiextensionsv1.CustomResourceSubresourceScale) *apiextensionsv1.CustomResourceDefinition {
	plural := lower(gvk.Kind) + "s"
	open := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + gvk.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvk.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: gvk.Kind, ListKind: gvk.Kind + "List", Plural: plural, Singular: lower(gvk.Kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gvk.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptrTo(true), Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": {Type: "integer", Format: "int32"},
						}},
						"status": open,
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}, Scale: scale},
			}},
		},
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// ScalableApp is an object of gvk named name with replicas, labels
// app=name on its selector and, when withTemplate, a pod template.
func ScalableApp(gvk schema.GroupVersionKind, namespace, name string, replicas int32, withTemplate bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(replicas)}}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	if withTemplate {
		t, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
		})
		delete(t, "metadata")
		t["metadata"] = map[string]any{"labels": map[string]any{"app": name}}
		_ = unstructured.SetNestedMap(u.Object, t, "spec", "template")
	}
	return u
}

// FollowScalableApp plays the kind's controller and the kubelet once, as
// a real controller would: as many Pods (labelled app=<name>, owned by
// the object, Ready) as spec.replicas, and status.replicas,
// status.readyReplicas and status.selector ("app=<name>") to match. It
// returns spec.replicas.
func FollowScalableApp(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, namespace, name string) (int32, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		return 0, err
	}
	want, _, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if err != nil {
		return 0, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{"app": name}); err != nil {
		return 0, err
	}
	owner := metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, UID: u.GetUID(), Controller: ptrTo(true)}
	for i := int64(len(pods.Items)); i < want; i++ {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Namespace: namespace, Labels: map[string]string{"app": name}, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
		}
		if err := c.Create(ctx, p); err != nil {
			return 0, err
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if err := c.Status().Update(ctx, p); err != nil {
			return 0, err
		}
	}
	for i := int(want); i < len(pods.Items); i++ {
		if err := client.IgnoreNotFound(c.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0))); err != nil {
			return 0, err
		}
	}
	status := map[string]any{"replicas": want, "readyReplicas": want, "selector": "app=" + name}
	if err := unstructured.SetNestedMap(u.Object, status, "status"); err != nil {
		return 0, err
	}
	if err := c.Status().Update(ctx, u); err != nil {
		return 0, fmt.Errorf("writing the status of %s %s: %w", gvk.Kind, name, err)
	}
	return int32(want), nil
}
