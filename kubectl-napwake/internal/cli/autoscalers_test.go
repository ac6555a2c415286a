package cli

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// TestDescribeNamesTheHPAsOfTheTarget: describe, against a real API
// server, names the HorizontalPodAutoscaler whose scaleTargetRef is the
// workload's target, with its bounds, and not one of another workload.
func TestDescribeNamesTheHPAsOfTheTarget(t *testing.T) {
	ns := namespace(t, "describe-hpa")
	for _, h := range []struct{ name, target string }{{"web-hpa", "web"}, {"other-hpa", "other"}} {
		hpa := &autoscalingv1.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: h.name},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: h.target},
				MinReplicas:    ptr.To[int32](2), MaxReplicas: 6,
			},
		}
		if err := admin.Create(context.Background(), hpa); err != nil {
			t.Fatal(err)
		}
	}
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Status:     napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning},
	})
	r := run(t, adminKubeconfig, nil, "describe", "web", "-n", ns)
	mustSucceed(t, r)
	if !strings.Contains(r.out, "Autoscalers:   HorizontalPodAutoscaler/web-hpa (2 to 6 replicas)\n") {
		t.Errorf("describe does not name web's HPA alone:\n%s", r.out)
	}
}
