package render

import (
	"bytes"
	"testing"

	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestScalesMatchesAScaleTargetRefToTheTarget(t *testing.T) {
	deployment := napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "web"}
	rollout := napwakev1alpha1.TargetRef{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web"}
	for _, tc := range []struct {
		name                    string
		apiVersion, kind, named string
		target                  napwakev1alpha1.TargetRef
		want                    bool
	}{
		{"an HPA of the Deployment", "apps/v1", "Deployment", "web", deployment, true},
		{"a ScaledObject with KEDA's defaults (no apiVersion, no kind)", "", "", "web", deployment, true},
		{"another name", "apps/v1", "Deployment", "api", deployment, false},
		{"a StatefulSet of the same name", "apps/v1", "StatefulSet", "web", deployment, false},
		{"a Deployment of another group", "example.com/v1", "Deployment", "web", deployment, false},
		{"a Rollout, whatever its version", "argoproj.io/v1", "Rollout", "web", rollout, true},
		{"a Rollout named without its group", "", "Rollout", "web", rollout, false},
		{"an unreadable apiVersion", "a/b/c", "Deployment", "web", deployment, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Scales(tc.apiVersion, tc.kind, tc.named, tc.target); got != tc.want {
				t.Fatalf("Scales(%q, %q, %q, %+v) = %v, want %v", tc.apiVersion, tc.kind, tc.named, tc.target, got, tc.want)
			}
		})
	}
}

func TestDescribeNamesTheAutoscalersGolden(t *testing.T) {
	mws, events := fleet()
	var b bytes.Buffer
	DescribeWith(&b, &mws[0], events, Around{Autoscalers: []Autoscaler{
		{Kind: "HorizontalPodAutoscaler", Name: "api", Min: ptr.To[int64](1), Max: ptr.To[int64](5)},
		{Kind: "ScaledObject", Name: "api-queue", Max: ptr.To[int64](10)},
	}}, Options{Now: now})
	golden(t, "describe-autoscalers", b.Bytes())
}
