package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// callerPod creates a Running Pod of Deployment owner (through its
// ReplicaSet, as the Deployment controller names it) holding ip since
// since. Its labels match no selector, so no pause waits for it to go.
func (e *env) callerPod(name, owner, ip string, since time.Time) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: map[string]string{"role": "caller", "pod-template-hash": "5d9f"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner + "-5d9f", UID: types.UID("uid-" + owner), Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
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

func TestOwnerTargetNamesTheWorkloadControllingAPod(t *testing.T) {
	pod := func(apiVersion, kind, name string, labels map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: ptr.To(true)}}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string // TargetRef.String(); "" for none
	}{
		{"a Deployment's, through its ReplicaSet", pod("apps/v1", "ReplicaSet", "api-5d4f", map[string]string{"pod-template-hash": "5d4f"}), "Deployment/api"},
		{"a ReplicaSet's without the hash", pod("apps/v1", "ReplicaSet", "api-5d4f", nil), ""},
		{"a StatefulSet's", pod("apps/v1", "StatefulSet", "db", nil), "StatefulSet/db"},
		{"another kind's, owned directly", pod("test.napwake.dev/v1", "ScalableApp", "web", nil), "ScalableApp.test.napwake.dev/web"},
		{"a DaemonSet's", pod("apps/v1", "DaemonSet", "agent", nil), ""},
		{"no owner", pod("", "", "", nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, ok := ownerTarget(tc.pod)
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
