package manager

import (
	"context"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/shared/testenv"
)

// TestAnHPAChangedWhilePausedIsReportedAndTheSavedCountWins: a
// Deployment of 2 replicas with an HPA (minReplicas 1) pauses; the HPA's
// minReplicas raised to 3 while paused gives an AutoscalerChanged event on
// the ManagedWorkload, brought by the HPA watch alone (the sync period, an
// hour, is beyond the wait); the wake restores the 2 saved, not the HPA's
// 3 (its controller, absent here, scales from there).
func TestAnHPAChangedWhilePausedIsReportedAndTheSavedCountWins(t *testing.T) {
	cfg := testConfig()
	cfg.SyncPeriod = time.Hour
	s := start(t, cfg, metrics.New())
	ctx := context.Background()
	ns := namespace(t, map[string]string{napwakev1alpha1.LabelEnabled: "true"}, nil)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 5,
		},
	}
	must(t, k8s.Create(ctx, hpa))
	must(t, k8s.Create(ctx, deployment(ns, "web", 2, nil, map[string]string{napwakev1alpha1.AnnotationPauseRequested: s.clock.Now().Format(time.RFC3339)})))
	testenv.Eventually(t, "scaled to 0", func() error { return replicasAre(ns, "web", 0) })
	testenv.Eventually(t, "Paused", func() error { return phaseIs(ns, "web", napwakev1alpha1.PhasePaused) })

	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(hpa), hpa))
	hpa.Spec.MinReplicas = ptr.To[int32](3)
	must(t, k8s.Update(ctx, hpa))
	testenv.Eventually(t, "an AutoscalerChanged event", func() error {
		return findEvent(ns, "web", napwakev1alpha1.EventAutoscalerChanged,
			"HorizontalPodAutoscaler web-hpa: minReplicas 1 → 3 while paused; the wake restores the 2 replicas saved")
	})

	s.clock.Step(time.Minute)
	d := deployment(ns, "web", 0, nil, nil)
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
	d.Annotations[napwakev1alpha1.AnnotationWakeRequested] = s.clock.Now().Format(time.RFC3339)
	must(t, k8s.Update(ctx, d))
	testenv.Eventually(t, "woken to the 2 saved", func() error { return replicasAre(ns, "web", 2) })
}
