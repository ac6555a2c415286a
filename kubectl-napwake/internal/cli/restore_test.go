package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
)

// TestRestoreScalesBackAndRemovesRoutesWithoutTheOperator: `kubectl napwake
// restore -n NS` on a cluster with no operator puts a paused workload back
// at its saved replicas, removes the slice that led to the doorman, and says
// so; a user with no rights is told, not left guessing.
func TestRestoreScalesBackAndRemovesRoutesWithoutTheOperator(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "restore")
	labels := map[string]string{"app": "api"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
			},
		},
	}
	if err := admin.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Status: napwakev1alpha1.ManagedWorkloadStatus{
			Phase: napwakev1alpha1.PhasePaused,
			Pause: &napwakev1alpha1.PauseStatus{StartedAt: at(-10 * time.Minute), Replicas: 2, Reason: napwakev1alpha1.PauseIdle},
		},
	})
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-napwake-ipv4", Labels: map[string]string{
			napwakev1alpha1.LabelServiceName: "api", napwakev1alpha1.LabelWorkload: "api",
			napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.9"}}},
	}
	if err := admin.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}

	if r := run(t, aliceKubeconfig, nil, "restore", "-n", ns, "--timeout", "1s"); r.err == nil || !strings.Contains(r.err.Error(), "forbidden") && !strings.Contains(r.err.Error(), "not allowed") {
		t.Errorf("restore as a user with no rights: err = %v, want it refused saying so", r.err)
	}
	r := run(t, adminKubeconfig, nil, "restore", "-n", ns, "--timeout", "1s")
	if r.err != nil {
		t.Fatalf("restore: %v\n%s%s", r.err, r.out, r.errOut)
	}
	for _, want := range []string{"1 ManagedWorkloads in namespace " + ns + "; 1 paused or pausing", ns + "/api: Deployment/api 0 → 2 replicas", "Removed 1 EndpointSlices", "Done:"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("restore's output does not say %q:\n%s", want, r.out)
		}
	}
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api"}, d); err != nil || *d.Spec.Replicas != 2 {
		t.Errorf("api has %d replicas after restore (err %v), want its saved 2", *d.Spec.Replicas, err)
	}
	var left discoveryv1.EndpointSliceList
	if err := admin.List(ctx, &left, client.InNamespace(ns)); err != nil || len(left.Items) != 0 {
		t.Errorf("slices left after restore: %d (err %v)", len(left.Items), err)
	}
	if r := run(t, adminKubeconfig, nil, "restore", "--timeout", "0s"); r.err == nil || !strings.Contains(r.err.Error(), "--timeout must be more than 0s") {
		t.Errorf("restore --timeout 0s: err = %v, want it refused naming the flag", r.err)
	}
}

// TestRestoreScalesBackAKindWithAScaleSubresource: the plugin's restore
// scales a paused workload of another kind (testenv's ScalableApp, a kind
// its static mapping does not know) back to its saved replicas through its
// scale subresource, finding the kind by discovery.
func TestRestoreScalesBackAKindWithAScaleSubresource(t *testing.T) {
	ctx := context.Background()
	if err := testenv.InstallScalableCRDs(env.Config); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, "restore-kind")
	gvk := testenv.ScalableAppGVK
	if err := admin.Create(ctx, testenv.ScalableApp(gvk, ns, "web", 0, true)); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.FollowScalableApp(ctx, admin, gvk, ns, "web"); err != nil {
		t.Fatal(err)
	}
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{APIVersion: "test.napwake.dev/v1", Kind: "ScalableApp", Name: "web"}},
		Status: napwakev1alpha1.ManagedWorkloadStatus{
			Phase: napwakev1alpha1.PhasePaused,
			Pause: &napwakev1alpha1.PauseStatus{StartedAt: at(-10 * time.Minute), Replicas: 2, Reason: napwakev1alpha1.PauseIdle},
		},
	})
	r := run(t, adminKubeconfig, nil, "restore", "-n", ns, "--timeout", "1s")
	if r.err != nil {
		t.Fatalf("restore: %v\n%s%s", r.err, r.out, r.errOut)
	}
	u := testenv.ScalableApp(gvk, ns, "web", 0, false)
	if err := admin.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); n != 2 {
		t.Fatalf("spec.replicas %d after restore, want its saved 2\n%s", n, r.out)
	}
	if !strings.Contains(r.out, "ScalableApp.test.napwake.dev/web 0 → 2 replicas") {
		t.Errorf("restore's output does not name it:\n%s", r.out)
	}
}
