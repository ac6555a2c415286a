package controller

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
)

// callerPod creates a Running Pod of Deployment owner (through its
// ReplicaSet, as the Deployment controller names it) holding ip since
// since. Its labels match no selector, so no pause waits for it to go.
func (e *env) callerPod(name, owner, ip string, since time.Time) *corev1.Pod {
	e.t.Helper()
	return e.runningPod(name, map[string]string{"role": "caller", "pod-template-hash": "5d9f"},
		metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner + "-5d9f", UID: types.UID("uid-" + owner), Controller: ptr.To(true)}, ip, since)
}

// runningPod creates a Running Pod with labels, controlled by owner,
// holding ip since since.
func (e *env) runningPod(name string, labels map[string]string, owner metav1.OwnerReference, ip string, since time.Time) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
	}
	must(e.t, k8s.Create(e.ctx, p))
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}},
	}
	must(e.t, k8s.Status().Update(e.ctx, p))
	return p
}

// requestFrom plays the doorman: a request from ip woke name now.
func (e *env) requestFrom(name, ip string) {
	e.t.Helper()
	e.annotate(name, napwakev1alpha1.AnnotationLastRequestFrom, ip)
	e.annotate(name, napwakev1alpha1.AnnotationLastRequest, e.stamp())
}

func (e *env) learned(name string) []napwakev1alpha1.LearnedDependency {
	e.t.Helper()
	if d := e.mw(name).Status.Dependencies; d != nil {
		return d.Learned
	}
	return nil
}

func TestALearnedEdgeComesFromTheCallingPodsIPAndWakesOnlyWithTheCaller(t *testing.T) {
	e := newEnv(t)
	e.add("front", 1)
	e.add("api", 0)
	e.callerPod("front-5d9f-abcde", "front", "10.244.1.7", e.clock.Now().Add(-time.Hour))

	e.clock.Step(time.Minute)
	seen := e.clock.Now().Truncate(time.Second)
	e.requestFrom("api", "10.244.1.7")
	e.reconcile("api")
	got := e.learned("front")
	if len(got) != 1 || got[0].Namespace != e.ns || got[0].Name != "api" || !got[0].LastSeen.Time.Equal(seen) {
		t.Fatalf("front learned %+v, want %s/api last seen %v", got, e.ns, seen)
	}
	e.reconcile("front")
	if c := e.condition("front"); c.Status != metav1.ConditionTrue || c.Message != "wakes as learned "+e.ns+"/api" {
		t.Errorf("front's Dependencies condition %s %q, want True saying it wakes api as learned", c.Status, c.Message)
	}

	// A learned edge never holds: api, Running past its idleAfter under a
	// running front, pauses.
	e.follow("api")
	e.reconcile("api")
	e.wantPhase(napwakev1alpha1.PhaseRunning, "api")
	e.clock.Step(5 * time.Minute)
	e.annotate("front", napwakev1alpha1.AnnotationLastActivity, e.stamp())
	e.reconcile("front")
	e.clock.Step(6 * time.Minute)
	e.reconcile("api")
	e.wantPhase(napwakev1alpha1.PhasePausing, "api")
	e.follow("api")
	e.reconcile("api")
	e.wantPhase(napwakev1alpha1.PhasePaused, "api")

	// The caller's next wake wakes it.
	e.clock.Step(10 * time.Minute)
	e.reconcile("front")
	e.wantPhase(napwakev1alpha1.PhasePausing, "front")
	e.follow("front")
	e.reconcile("front")
	e.clock.Step(time.Minute)
	e.annotate("front", napwakev1alpha1.AnnotationWakeRequested, e.stamp())
	e.reconcile("front", "api")
	e.wantPhase(napwakev1alpha1.PhaseResuming, "front", "api")
	if s := e.mw("api").Status.LastActivitySource; s != napwakev1alpha1.SourceDependent {
		t.Errorf("api woken by %q, want dependent", s)
	}

	// Unseen for 7 days, the edge is dropped.
	e.clock.Step(7 * 24 * time.Hour)
	e.reconcile("front")
	if got := e.learned("front"); len(got) != 0 {
		t.Errorf("front still learned %+v after 7 days unseen", got)
	}
}

func TestAnIPADeletedPodUsedToHaveTeachesNothing(t *testing.T) {
	e := newEnv(t)
	e.add("front", 1)
	e.add("worker", 1)
	e.add("api", 0)
	gone := e.callerPod("front-5d9f-old", "front", "10.244.2.9", e.clock.Now().Add(-time.Hour))
	e.clock.Step(time.Minute)
	must(t, k8s.Delete(e.ctx, gone, client.GracePeriodSeconds(0)))
	e.requestFrom("api", "10.244.2.9")
	e.reconcile("api")
	// The address comes back on another workload's Pod after the request.
	e.callerPod("worker-5d9f-new", "worker", "10.244.2.9", e.clock.Now().Add(time.Second))
	e.clock.Step(2 * time.Second)
	e.reconcile("api")
	e.r.taught.Clear() // and even looked at afresh
	e.reconcile("api")
	if got, other := e.learned("front"), e.learned("worker"); len(got)+len(other) != 0 {
		t.Errorf("learned %+v on front and %+v on worker from an address no Pod certainly held at the request", got, other)
	}
	e.wantPhase(napwakev1alpha1.PhaseResuming, "api")
}

func TestOwnerTargetNamesTheWorkloadAnOwnerIs(t *testing.T) {
	owner := func(apiVersion, kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, Controller: ptr.To(true)}
	}
	for _, tc := range []struct {
		name  string
		owner metav1.OwnerReference
		hash  string
		want  string // TargetRef.String(); "" for none
	}{
		{"a Deployment's ReplicaSet", owner("apps/v1", "ReplicaSet", "api-5d4f"), "5d4f", "Deployment/api"},
		{"a ReplicaSet without the hash", owner("apps/v1", "ReplicaSet", "api-5d4f"), "", ""},
		{"a ReplicaSet not named with the hash (an Argo Rollout's)", owner("apps/v1", "ReplicaSet", "web-7c6b"), "5d4f", ""},
		{"a Deployment", owner("apps/v1", "Deployment", "api"), "", "Deployment/api"},
		{"a StatefulSet", owner("apps/v1", "StatefulSet", "db"), "", "StatefulSet/db"},
		{"another kind", owner("test.napwake.dev/v1", "ScalableApp", "web"), "", "ScalableApp.test.napwake.dev/web"},
		{"a DaemonSet", owner("apps/v1", "DaemonSet", "agent"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, ok := ownerTarget(tc.owner, tc.hash)
			got := ""
			if ok {
				got = ref.String()
			}
			if got != tc.want {
				t.Fatalf("ownerTarget = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestALearnedEdgeFollowsTheCallersPodThroughItsReplicaSetToAnotherKind:
// a caller of a kind from --target-kinds whose Pods come through a
// ReplicaSet it controls, as an Argo Rollout's do (Pod → ReplicaSet →
// Rollout, the Pods labelled rollouts-pod-template-hash), is found by
// walking the owners, and learns the edge.
func TestALearnedEdgeFollowsTheCallersPodThroughItsReplicaSetToAnotherKind(t *testing.T) {
	must(t, testenv.InstallScalableCRDs(restCfg))
	gvk := testenv.ScalableAppGVK
	e := newEnv(t)
	e.r.TargetKinds = []schema.GroupVersionKind{gvk}
	e.add("api", 0)
	front := testenv.ScalableApp(gvk, e.ns, "front", 1, true)
	must(t, k8s.Create(e.ctx, front))
	must(t, k8s.Create(e.ctx, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "front"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			TargetRef: napwakev1alpha1.TargetRef{APIVersion: gvk.GroupVersion().String(), Kind: napwakev1alpha1.TargetKind(gvk.Kind), Name: "front"},
		},
	}))
	labels := map[string]string{"app": "front", "rollouts-pod-template-hash": "7c6b"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "front-7c6b", Labels: labels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: "front", UID: front.GetUID(), Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}},
		},
	}
	must(t, k8s.Create(e.ctx, rs))
	e.runningPod("front-7c6b-abcde", labels, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)},
		"10.244.3.5", e.clock.Now().Add(-time.Hour))

	e.clock.Step(time.Minute)
	seen := e.clock.Now().Truncate(time.Second)
	e.requestFrom("api", "10.244.3.5")
	e.reconcile("api")
	if got := e.learned("front"); len(got) != 1 || got[0].Name != "api" || !got[0].LastSeen.Time.Equal(seen) {
		t.Fatalf("front (a ScalableApp through its ReplicaSet) learned %+v, want %s/api last seen %v", got, e.ns, seen)
	}
}
