package manager

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/shared/testenv"
)

// These two run in this order: the second installs KEDA's CRD, which the
// first must not see.

// TestKEDAWithoutItsCRDAndCronJobsRunInTheManager: --keda on an API server
// without KEDA's CRD starts, pauses and says so without an error, and
// --suspend-cronjobs suspends a labelled namespace's CronJob through the
// manager's cache once its only workload is paused.
func TestKEDAWithoutItsCRDAndCronJobsRunInTheManager(t *testing.T) {
	cfg := testConfig()
	cfg.KEDA, cfg.SuspendCronJobs = true, true
	s := start(t, cfg, metrics.New())
	ctx := context.Background()
	ns := namespace(t, map[string]string{napwakev1alpha1.LabelEnabled: "true"}, nil)
	must(t, k8s.Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report"},
		Spec: batchv1.CronJobSpec{Schedule: "0 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "job", Image: "registry.invalid/job:1"}},
		}}}}},
	}))
	must(t, k8s.Create(ctx, deployment(ns, "api", 1, nil, map[string]string{napwakev1alpha1.AnnotationPauseRequested: s.clock.Now().Format(time.RFC3339)})))
	testenv.Eventually(t, "scaled to 0", func() error { return replicasAre(ns, "api", 0) })
	d := &appsv1.Deployment{}
	must(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api"}, d))
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
	must(t, k8s.Status().Update(ctx, d))
	testenv.Eventually(t, "Paused", func() error { return phaseIs(ns, "api", napwakev1alpha1.PhasePaused) })
	testenv.Eventually(t, "the CronJob suspended", func() error {
		cj := &batchv1.CronJob{}
		must(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "report"}, cj))
		if !ptr.Deref(cj.Spec.Suspend, false) || cj.Annotations[napwakev1alpha1.AnnotationSuspended] != "true" {
			return fmt.Errorf("suspend %v annotations %v", cj.Spec.Suspend, cj.Annotations)
		}
		return nil
	})
	testenv.Eventually(t, "the Autoscalers condition", func() error {
		mw, err := getMW(ns, "api")
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionAutoscalers)
		if c == nil || c.Reason != napwakev1alpha1.ReasonNoAutoscalers || !strings.Contains(c.Message, "not installed") {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

// TestAScaledObjectEditedWhilePausedIsSetBackThroughTheWatch: with KEDA's
// CRD installed before the manager starts, the manager watches
// ScaledObjects, so paused-replicas changed while paused is set back at
// once, not at the next sync period.
func TestAScaledObjectEditedWhilePausedIsSetBackThroughTheWatch(t *testing.T) {
	_, err := envtest.InstallCRDs(restCfg, envtest.CRDInstallOptions{Paths: []string{"../controller/testdata/keda"}, ErrorIfPathMissing: true})
	must(t, err)
	cfg := testConfig()
	cfg.KEDA = true
	cfg.SyncPeriod = time.Hour // so only the watch can bring the reconcile
	s := start(t, cfg, metrics.New())
	ctx := context.Background()
	ns := namespace(t, map[string]string{napwakev1alpha1.LabelEnabled: "true"}, nil)
	so := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"scaleTargetRef": map[string]any{"name": "web"},
		"triggers":       []any{map[string]any{"type": "cpu", "metadata": map[string]any{"value": "50"}}},
	}}}
	so.SetGroupVersionKind(schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"})
	so.SetNamespace(ns)
	so.SetName("web")
	must(t, k8s.Create(ctx, so))
	key := client.ObjectKeyFromObject(so)
	pausedReplicas := func(want string) func() error {
		return func() error {
			must(t, k8s.Get(ctx, key, so))
			if got := so.GetAnnotations()[napwakev1alpha1.AnnotationKEDAPausedReplicas]; got != want {
				return fmt.Errorf("paused-replicas %q, want %q", got, want)
			}
			return nil
		}
	}
	must(t, k8s.Create(ctx, deployment(ns, "web", 1, nil, map[string]string{napwakev1alpha1.AnnotationPauseRequested: s.clock.Now().Format(time.RFC3339)})))
	testenv.Eventually(t, "scaled to 0", func() error { return replicasAre(ns, "web", 0) })
	testenv.Eventually(t, "paused-replicas 0", pausedReplicas("0"))
	testenv.Eventually(t, "Paused", func() error { return phaseIs(ns, "web", napwakev1alpha1.PhasePaused) })

	must(t, k8s.Get(ctx, key, so))
	a := so.GetAnnotations()
	a[napwakev1alpha1.AnnotationKEDAPausedReplicas] = "4"
	so.SetAnnotations(a)
	must(t, k8s.Update(ctx, so))
	testenv.Eventually(t, "paused-replicas set back to 0", pausedReplicas("0"))
	testenv.Eventually(t, "an AutoscalerReset event", func() error {
		return findEvent(ns, "web", napwakev1alpha1.EventAutoscalerReset, "set back to 0")
	})

	// A change of its spec while paused is reported; the pause holds.
	must(t, k8s.Get(ctx, key, so))
	must(t, unstructured.SetNestedField(so.Object, int64(2), "spec", "minReplicaCount"))
	must(t, k8s.Update(ctx, so))
	testenv.Eventually(t, "an AutoscalerChanged event", func() error {
		return findEvent(ns, "web", napwakev1alpha1.EventAutoscalerChanged, "ScaledObject web: minReplicaCount unset → 2 while paused")
	})
	must(t, replicasAre(ns, "web", 0))
}
