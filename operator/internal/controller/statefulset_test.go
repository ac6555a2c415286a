package controller

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestAStatefulSetPausesAndWakesThroughItsScaleSubresource(t *testing.T) {
	f := newFixture(t, 1) // the namespace, clock and reconciler; its Deployment is not used
	key := types.NamespacedName{Namespace: f.ns, Name: "db"}
	labels := map[string]string{"app": "db"}
	must(t, k8s.Create(f.ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "registry.invalid/db:1"}}},
			},
		},
	}))
	must(t, k8s.Create(f.ctx, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "db-statefulset"},
		Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindStatefulSet, Name: "db"}},
	}))
	f.mw = types.NamespacedName{Namespace: f.ns, Name: "db-statefulset"}
	replicas := func() int32 {
		s := &appsv1.StatefulSet{}
		must(t, k8s.Get(f.ctx, key, s))
		return replicasOf(s.Spec.Replicas)
	}

	f.runToRunning()
	f.clock.Step(31 * time.Minute) // the operator's default idleAfter, 30m
	f.reconcile()                  // no StatefulSet controller here: status.replicas is 0 and no pod matches, so Paused at once
	if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhasePaused || mw.Status.Pause.Replicas != 3 || replicas() != 0 {
		t.Fatalf("phase %q saved %v replicas %d; want Paused, 3 saved, 0", mw.Status.Phase, mw.Status.Pause, replicas())
	}
	f.clock.Step(time.Minute)
	f.annotate(&appsv1.StatefulSet{}, key, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
	f.reconcile()
	if replicas() != 3 {
		t.Fatalf("replicas %d after a wake, want 3", replicas())
	}
}
