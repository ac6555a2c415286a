package controller

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// envtest runs no CronJob controller: these tests check spec.suspend and
// Napwake's record, not that a Job is or is not started.

func (f *fixture) optInNamespace() {
	f.t.Helper()
	ns := &corev1.Namespace{}
	must(f.t, k8s.Get(f.ctx, types.NamespacedName{Name: f.ns}, ns))
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels = map[string]string{napwakev1alpha1.LabelEnabled: "true"}
	must(f.t, k8s.Patch(f.ctx, ns, patch))
}

func (f *fixture) createCronJob(name string, suspend bool, labels map[string]string) types.NamespacedName {
	f.t.Helper()
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: labels},
		Spec: batchv1.CronJobSpec{
			Schedule: "*/5 * * * *",
			Suspend:  ptr.To(suspend),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "job", Image: "registry.invalid/job:1"}},
			}}}},
		},
	}
	must(f.t, k8s.Create(f.ctx, cj))
	return types.NamespacedName{Namespace: f.ns, Name: name}
}

// wantCronJob fails unless the CronJob's spec.suspend and Napwake's record
// are as given.
func (f *fixture) wantCronJob(key types.NamespacedName, suspend, recorded bool, why string) {
	f.t.Helper()
	cj := &batchv1.CronJob{}
	must(f.t, k8s.Get(f.ctx, key, cj))
	gotSuspend := cj.Spec.Suspend != nil && *cj.Spec.Suspend
	_, gotRecord := cj.Annotations[napwakev1alpha1.AnnotationSuspended]
	if gotSuspend != suspend || gotRecord != recorded {
		f.t.Fatalf("CronJob %s suspend %v record %v (annotations %v), want suspend %v record %v: %s",
			key.Name, gotSuspend, gotRecord, cj.Annotations, suspend, recorded, why)
	}
}

// addWorker adds a second Deployment and ManagedWorkload, "worker", with no
// pod, reconciled to Running.
func (f *fixture) addWorker() types.NamespacedName {
	f.t.Helper()
	must(f.t, k8s.Create(f.ctx, deployment(f.ns, "worker", 1)))
	must(f.t, k8s.Create(f.ctx, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "worker"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "worker"},
			IdleAfter: &metav1.Duration{Duration: 10 * time.Minute},
		},
	}))
	key := types.NamespacedName{Namespace: f.ns, Name: "worker"}
	f.reconcileKey(key)
	return key
}

func (f *fixture) reconcileKey(key types.NamespacedName) {
	f.t.Helper()
	if _, err := f.r.Reconcile(f.ctx, reconcile.Request{NamespacedName: key}); err != nil {
		f.t.Fatalf("Reconcile %s: %v", key, err)
	}
}

func TestCronJobsOfAnOptedInNamespace(t *testing.T) {
	t.Run("are suspended while every workload is paused, and only Napwake's are resumed", func(t *testing.T) {
		f := newFixture(t, 2)
		f.r.SuspendCronJobs = true
		f.optInNamespace()
		report := f.createCronJob("report", false, nil)
		owners := f.createCronJob("owners", true, nil)
		ignored := f.createCronJob("ignored", false, map[string]string{napwakev1alpha1.LabelIgnore: "true"})
		worker := f.addWorker()
		f.runToRunning()
		f.wantCondition(napwakev1alpha1.ConditionCronJobs, metav1.ConditionTrue, napwakev1alpha1.ReasonCronJobsRunning, "holds no CronJob")

		f.pauseIt()
		f.wantCronJob(report, false, false, "the worker is still running")

		f.reconcileKey(worker) // idle as long: it pauses, and is the last
		f.reconcileKey(worker)
		w := &napwakev1alpha1.ManagedWorkload{}
		must(t, k8s.Get(f.ctx, worker, w))
		if w.Status.Phase != napwakev1alpha1.PhasePaused {
			t.Fatalf("worker phase %q, want Paused", w.Status.Phase)
		}
		f.wantCronJob(report, true, true, "every workload paused")
		f.wantCronJob(owners, true, false, "its owner's suspension")
		f.wantCronJob(ignored, false, false, "labelled napwake.dev/ignore")
		f.reconcile()
		f.wantCondition(napwakev1alpha1.ConditionCronJobs, metav1.ConditionTrue, napwakev1alpha1.ReasonCronJobsSuspended, "suspended CronJob report")

		f.wake()
		f.wantCronJob(report, false, false, "a workload woke")
		f.wantCronJob(owners, true, false, "never resumed by Napwake")
		f.wantCronJob(ignored, false, false, "labelled napwake.dev/ignore")
		f.wantCondition(napwakev1alpha1.ConditionCronJobs, metav1.ConditionTrue, napwakev1alpha1.ReasonCronJobsRunning, "holds no CronJob")
	})

	t.Run("of a namespace not opted in are left alone", func(t *testing.T) {
		f := newFixture(t, 2)
		f.r.SuspendCronJobs = true
		report := f.createCronJob("report", false, nil)
		f.runToRunning()
		f.pauseIt()
		f.wantCronJob(report, false, false, "namespace not labelled")
		if c := f.condition(napwakev1alpha1.ConditionCronJobs); c != nil {
			t.Fatalf("CronJobs condition %+v in a namespace not opted in", c)
		}
	})

	t.Run("are resumed when the last ManagedWorkload is deleted", func(t *testing.T) {
		f := newFixture(t, 2)
		f.r.SuspendCronJobs = true
		f.optInNamespace()
		report := f.createCronJob("report", false, nil)
		f.runToRunning()
		f.pauseIt()
		f.wantCronJob(report, true, true, "the only workload paused")
		must(t, k8s.Delete(f.ctx, f.managedWorkload()))
		f.reconcile()
		f.wantCronJob(report, false, false, "no workload left")
	})
}
