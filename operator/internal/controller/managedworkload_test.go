package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestANewWorkloadRunsWithItsPauseAtAndSaysWhichSignalsItUses(t *testing.T) {
	f := newFixture(t, 2)
	f.runToRunning()
	mw := f.managedWorkload()
	if !mw.Status.PauseAt.Time.Equal(start.Add(10*time.Minute)) || mw.Status.LastActivitySource != napwakev1alpha1.SourceCreated {
		t.Errorf("pauseAt %v source %q, want %v created", mw.Status.PauseAt, mw.Status.LastActivitySource, start.Add(10*time.Minute))
	}
	if !containsString(mw.Finalizers, napwakev1alpha1.Finalizer) {
		t.Errorf("finalizers %v lack %s", mw.Finalizers, napwakev1alpha1.Finalizer)
	}
	c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionActivitySignals)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != napwakev1alpha1.ReasonUsageUnavailable {
		t.Errorf("ActivitySignals %+v, want False UsageUnavailable (envtest serves no metrics.k8s.io)", c)
	}
	if c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionTargetAvailable); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("TargetAvailable %+v, want True", c)
	}
	// Activity moves pauseAt.
	f.clock.Step(5 * time.Minute)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastActivity, f.stamp())
	res := f.reconcile()
	mw = f.managedWorkload()
	if !mw.Status.PauseAt.Time.Equal(start.Add(15*time.Minute)) || mw.Status.LastActivitySource != napwakev1alpha1.SourceAnnotation {
		t.Errorf("pauseAt %v source %q after activity, want %v annotation", mw.Status.PauseAt, mw.Status.LastActivitySource, start.Add(15*time.Minute))
	}
	if res.RequeueAfter != time.Minute {
		t.Errorf("requeue after %v, want the sync period (1m) as pauseAt is further", res.RequeueAfter)
	}
}

func TestAnIdleWorkloadSavesItsReplicasBeforeScalingAndIsPausedOnceNoPodIsLeft(t *testing.T) {
	f := newFixture(t, 3)
	f.runToRunning()
	f.clock.Step(9 * time.Minute)
	f.reconcile()
	if got := replicasOf(f.deployment().Spec.Replicas); got != 3 {
		t.Fatalf("scaled to %d before idleAfter", got)
	}
	f.clock.Step(time.Minute)
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhasePausing || mw.Status.Pause == nil || mw.Status.Pause.Replicas != 3 || mw.Status.Pause.Reason != napwakev1alpha1.PauseIdle {
		t.Fatalf("status %+v, want Pausing with pause {3 Idle}", mw.Status)
	}
	if got := replicasOf(f.deployment().Spec.Replicas); got != 0 {
		t.Fatalf("replicas %d, want 0", got)
	}
	// The router was called with the pause persisted and the target not yet scaled.
	if len(f.router.routedWith) == 0 || f.router.routedWith[0] != "Pausing saved=3 replicas=3" {
		t.Errorf("router saw %q, want the pause persisted before scaling", f.router.routedWith)
	}
	f.wantEvent(napwakev1alpha1.EventPausing, "Idle")

	// Pods still terminating: still Pausing.
	f.setPods(0, 0)
	must(t, k8s.Create(f.ctx, podFor(f.ns)))
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePausing {
		t.Fatalf("phase %q with a pod left, want Pausing", p)
	}
	f.setPods(0, 0)
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePaused {
		t.Fatalf("phase %q with no pod left, want Paused", p)
	}
	f.wantEvent(napwakev1alpha1.EventPaused, "restores 3 replicas")
	if got := testutil.ToFloat64(f.metrics.Pauses.WithLabelValues("Idle")); got != 1 {
		t.Errorf("pauses_total{reason=Idle} = %v, want 1", got)
	}
}

func TestEachWakeSignalRestoresTheSavedReplicas(t *testing.T) {
	for _, tc := range []struct {
		name   string
		source string
		wake   func(f *fixture)
	}{
		{"a request through the doorman", napwakev1alpha1.SourceRequest, func(f *fixture) {
			f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastRequest, f.stamp())
		}},
		{"activity on the ManagedWorkload", napwakev1alpha1.SourceAnnotation, func(f *fixture) {
			f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastActivity, f.stamp())
		}},
		{"activity on the workload", napwakev1alpha1.SourceAnnotation, func(f *fixture) {
			f.annotate(&appsv1.Deployment{}, f.dep, napwakev1alpha1.AnnotationLastActivity, f.stamp())
		}},
		{"wake-requested on a workload that asks", napwakev1alpha1.SourceWakeRequested, func(f *fixture) {
			mw := f.managedWorkload()
			mw.Spec.Wake.Mode = napwakev1alpha1.WakeAsk
			must(f.t, k8s.Update(f.ctx, mw))
			f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
		}},
		{"someone else scaling it up", napwakev1alpha1.SourceScaled, func(f *fixture) {
			d := f.deployment()
			d.Spec.Replicas = ptr.To[int32](1)
			must(f.t, k8s.Update(f.ctx, d))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 2)
			f.runToRunning()
			f.pauseIt()
			f.clock.Step(time.Hour)
			if got := testutil.ToFloat64(f.metrics.PausedReplicaSeconds); got != 2*3600 {
				t.Errorf("paused replica-seconds an hour into the pause %v, want 7200", got)
			}
			tc.wake(f)
			f.reconcile()
			mw := f.managedWorkload()
			if mw.Status.Phase != napwakev1alpha1.PhaseResuming || mw.Status.LastActivitySource != tc.source {
				t.Fatalf("phase %q source %q, want Resuming %s", mw.Status.Phase, mw.Status.LastActivitySource, tc.source)
			}
			if !mw.Status.ResumedAt.Time.Equal(f.clock.Now()) {
				t.Errorf("resumedAt %v, want %v", mw.Status.ResumedAt, f.clock.Now())
			}
			if got := replicasOf(f.deployment().Spec.Replicas); got != 2 {
				t.Fatalf("replicas %d, want the saved 2", got)
			}
			f.wantEvent(napwakev1alpha1.EventWaking, tc.source)
			if got := testutil.ToFloat64(f.metrics.Wakes.WithLabelValues(tc.source)); got != 1 {
				t.Errorf("wakes_total{source=%s} = %v, want 1", tc.source, got)
			}
			if got := testutil.ToFloat64(f.metrics.PausedReplicaSeconds); got != 2*3600 {
				t.Errorf("paused replica-seconds %v, want 7200", got)
			}
			// Not Running until a pod is Ready.
			f.setPods(2, 0)
			f.reconcile()
			if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhaseResuming {
				t.Fatalf("phase %q with no Ready pod, want Resuming", p)
			}
			unroutes := f.router.unroutes
			f.clock.Step(7 * time.Second)
			f.setPods(2, 1)
			f.reconcile()
			mw = f.managedWorkload()
			if mw.Status.Phase != napwakev1alpha1.PhaseRunning || f.router.unroutes != unroutes+1 {
				t.Fatalf("phase %q unroutes %d, want Running after one Unroute", mw.Status.Phase, f.router.unroutes-unroutes)
			}
			if !mw.Status.PauseAt.After(f.clock.Now()) {
				t.Errorf("pauseAt %v is not in the future after a wake", mw.Status.PauseAt)
			}
			f.wantEvent(napwakev1alpha1.EventRunning, "Ready")
			if n := testutil.CollectAndCount(f.metrics.ResumeSeconds); n != 1 {
				t.Errorf("resume histogram has %d series", n)
			}
		})
	}
}

func TestPauseRequestedPausesNowAndIsHandledOnce(t *testing.T) {
	f := newFixture(t, 2)
	f.runToRunning()
	f.clock.Step(time.Minute)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationPauseRequested, f.stamp())
	f.clock.Step(time.Second)
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhasePausing || mw.Status.Pause.Reason != napwakev1alpha1.PauseRequested {
		t.Fatalf("status %+v, want Pausing for Requested", mw.Status)
	}
	f.wantEvent(napwakev1alpha1.EventPausing, "Requested")
	f.followSpec()
	f.reconcile()
	// Wake it; the old pause-requested, still there, must not pause it again.
	f.clock.Step(time.Minute)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
	f.reconcile()
	f.followSpec()
	f.reconcile()
	f.clock.Step(time.Minute)
	f.reconcile()
	if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhaseRunning {
		t.Fatalf("phase %q, want Running: a handled pause-requested paused it again", mw.Status.Phase)
	}
}

func TestActivityDuringPausingCallsThePauseOff(t *testing.T) {
	f := newFixture(t, 2)
	f.runToRunning()
	f.clock.Step(11 * time.Minute)
	f.reconcile() // Pausing, scaled to 0, pods still there
	f.clock.Step(time.Second)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastRequest, f.stamp())
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhaseRunning && mw.Status.Phase != napwakev1alpha1.PhaseResuming {
		t.Fatalf("phase %q, want the pause called off", mw.Status.Phase)
	}
	if got := replicasOf(f.deployment().Spec.Replicas); got != 2 {
		t.Fatalf("replicas %d, want 2 restored", got)
	}
	f.wantEvent(napwakev1alpha1.EventPauseCalledOff, "request")
}

func TestSomeoneScalingMidPauseHasTheirCountSaved(t *testing.T) {
	f := newFixture(t, 2)
	f.runToRunning()
	// A writer that bumps the Deployment right as the operator scales it:
	// the scale write must fail with a conflict, not overwrite it.
	f.r.Client = &interferingClient{Client: k8s, before: func() {
		d := f.deployment()
		d.Spec.Replicas = ptr.To[int32](4)
		must(t, k8s.Update(f.ctx, d))
	}}
	f.clock.Step(11 * time.Minute)
	res, err := f.r.Reconcile(f.ctx, reqFor(f))
	if err != nil || res.RequeueAfter != conflictRetry {
		t.Fatalf("Reconcile = %+v, %v; want a quiet requeue on the conflict", res, err)
	}
	if got := replicasOf(f.deployment().Spec.Replicas); got != 4 {
		t.Fatalf("replicas %d: the other writer's 4 was overwritten", got)
	}
	f.r.Client = k8s
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Pause.Replicas != 4 || replicasOf(f.deployment().Spec.Replicas) != 0 {
		t.Fatalf("pause saved %d, replicas %d; want 4 saved, then 0", mw.Status.Pause.Replicas, replicasOf(f.deployment().Spec.Replicas))
	}
}

func TestAStatusConflictIsRetriedNotOverwritten(t *testing.T) {
	f := newFixture(t, 2)
	f.runToRunning()
	// Someone writes the ManagedWorkload between the operator's read and its
	// status patch: here, a turned-away count the doorman patched.
	f.r.Client = &interferingClient{Client: k8s, beforeStatus: func() {
		mw := f.managedWorkload()
		mw.Status.TurnedAway = &napwakev1alpha1.TurnedAwayStatus{PausedAt: metav1.NewTime(start), Requests: 7}
		must(t, k8s.Status().Update(f.ctx, mw))
	}}
	f.clock.Step(11 * time.Minute)
	res, err := f.r.Reconcile(f.ctx, reqFor(f))
	if err != nil || res.RequeueAfter != conflictRetry {
		t.Fatalf("Reconcile = %+v, %v; want a quiet requeue on the conflict", res, err)
	}
	if got := replicasOf(f.deployment().Spec.Replicas); got != 2 {
		t.Fatalf("replicas %d: scaled although the pause was not persisted", got)
	}
	f.r.Client = k8s
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhasePausing || mw.Status.TurnedAway == nil || mw.Status.TurnedAway.Requests != 7 {
		t.Fatalf("status %+v: want Pausing with the other writer's count kept", mw.Status)
	}
}

func TestATargetThatGoesAndComesBack(t *testing.T) {
	f := newFixture(t, 1)
	f.runToRunning()
	must(t, k8s.Delete(f.ctx, f.deployment()))
	f.reconcile()
	c := meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionTargetAvailable)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != napwakev1alpha1.ReasonTargetNotFound {
		t.Fatalf("TargetAvailable %+v, want False TargetNotFound", c)
	}
	if f.router.unroutes == 0 {
		t.Error("routes were not taken away from a missing target")
	}
	f.wantEvent(napwakev1alpha1.EventTargetNotFound, "does not exist")
	must(t, k8s.Create(f.ctx, deployment(f.ns, "api", 1)))
	f.reconcile()
	c = meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionTargetAvailable)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != napwakev1alpha1.ReasonTargetFound {
		t.Fatalf("TargetAvailable %+v, want True TargetFound", c)
	}
}

func TestDeletingAPausedManagedWorkloadRestoresItsReplicasFirst(t *testing.T) {
	f := newFixture(t, 3)
	f.runToRunning()
	f.pauseIt()
	must(t, k8s.Delete(f.ctx, f.managedWorkload()))
	f.reconcile()
	if got := replicasOf(f.deployment().Spec.Replicas); got != 3 {
		t.Fatalf("replicas %d after delete, want 3", got)
	}
	if f.router.finalizes != 1 {
		t.Errorf("router finalized %d times, want 1", f.router.finalizes)
	}
	if err := k8s.Get(f.ctx, f.mw, &napwakev1alpha1.ManagedWorkload{}); client.IgnoreNotFound(err) != nil || err == nil {
		t.Fatalf("ManagedWorkload still there (err %v), want it gone", err)
	}
}

func TestAWorkloadAlreadyAtZeroIsTakenAsPausedAndWakesToOne(t *testing.T) {
	f := newFixture(t, 0)
	f.reconcile()
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhasePaused || mw.Status.Pause.Replicas != 0 {
		t.Fatalf("status %+v, want Paused with 0 saved", mw.Status)
	}
	f.clock.Step(time.Minute)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
	f.reconcile()
	if got := replicasOf(f.deployment().Spec.Replicas); got != 1 {
		t.Fatalf("replicas %d, want 1", got)
	}
}

func podFor(ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "api-", Labels: map[string]string{"app": "api"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
	}
}

func reqFor(f *fixture) reconcile.Request { return reconcile.Request{NamespacedName: f.mw} }

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
