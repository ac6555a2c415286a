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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/shared/testenv"
)

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
