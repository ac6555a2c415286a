package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// applyAsArgoCD server-side applies the fixture's Deployment with replicas
// as Argo CD does, taking ownership of what it sets.
func (f *fixture) applyAsArgoCD(replicas int32) {
	f.t.Helper()
	labels := map[string]string{"app": "api"}
	d := appsv1ac.Deployment("api", f.ns).WithSpec(appsv1ac.DeploymentSpec().
		WithReplicas(replicas).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("app").WithImage("registry.invalid/app:1")))))
	must(f.t, k8s.Apply(f.ctx, d, client.FieldOwner("argocd-controller"), client.ForceOwnership))
}

func (f *fixture) gitOpsCondition() *metav1.Condition {
	f.t.Helper()
	return meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionGitOps)
}

// TestAWorkloadWhoseReplicasArgoCDOwnsSaysSoAndWakesWhenReapplied applies
// the Deployment server-side as argocd-controller, pauses it and re-applies
// it, as Argo CD's self-heal does: the GitOps condition says who owns
// spec.replicas and how to fix it, a warning says so once, the finding
// stands while paused, and the re-apply wakes the workload (source scaled).
func TestAWorkloadWhoseReplicasArgoCDOwnsSaysSoAndWakesWhenReapplied(t *testing.T) {
	f := newFixture(t, 2)
	f.applyAsArgoCD(2)
	f.runToRunning()
	c := f.gitOpsCondition()
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != napwakev1alpha1.ReasonReplicasManagedByGitOps ||
		!strings.Contains(c.Message, "argocd-controller") || !strings.Contains(c.Message, "RespectIgnoreDifferences=true") {
		t.Fatalf("GitOps condition %+v, want False ReplicasManagedByGitOps naming argocd-controller and the fix", c)
	}
	f.wantEvent(napwakev1alpha1.EventReplicasManagedByGitOps, "ignoreDifferences")

	f.pauseIt()
	if d := f.deployment(); replicasOf(d.Spec.Replicas) != 0 {
		t.Fatalf("replicas %d while paused, want 0", replicasOf(d.Spec.Replicas))
	}
	if c := f.gitOpsCondition(); c == nil || c.Reason != napwakev1alpha1.ReasonReplicasManagedByGitOps {
		t.Fatalf("GitOps condition %+v while paused, want the finding to stand", c)
	}

	// Self-heal: Argo CD re-applies replicas: 2.
	f.applyAsArgoCD(2)
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhaseResuming && mw.Status.Phase != napwakev1alpha1.PhaseRunning {
		t.Fatalf("phase %q after Argo CD re-applied replicas, want Resuming or Running", mw.Status.Phase)
	}
	if mw.Status.LastActivitySource != napwakev1alpha1.SourceScaled {
		t.Fatalf("source %q, want %q", mw.Status.LastActivitySource, napwakev1alpha1.SourceScaled)
	}
	if c := f.gitOpsCondition(); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("GitOps condition %+v after the re-apply, want False", c)
	}
}

// TestAWorkloadNoGitOpsToolOwnsIsReportedClean: a Deployment created by
// kubectl (or anyone else) gets GitOps True, and no warning.
func TestAWorkloadNoGitOpsToolOwnsIsReportedClean(t *testing.T) {
	f := newFixture(t, 1)
	f.runToRunning()
	c := f.gitOpsCondition()
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != napwakev1alpha1.ReasonReplicasNotManaged {
		t.Fatalf("GitOps condition %+v, want True ReplicasNotManaged", c)
	}
	for len(f.events.Events) > 0 {
		if e := <-f.events.Events; strings.Contains(e, napwakev1alpha1.EventReplicasManagedByGitOps) {
			t.Fatalf("warning %q for a workload no GitOps tool owns", e)
		}
	}
}
