package manager

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/shared/testenv"
)

// TestATargetKindInstalledAfterTheStartIsWatchedOnceServed: the operator
// starts with --target-kinds naming LateApp, whose CRD is not installed
// yet. Its ManagedWorkload gets TargetNotScalable saying the kind is not
// served, and nothing pauses; once the CRD is installed and a LateApp
// created, the kind is watched without a restart (the sync period, an
// hour, is beyond the wait): the ManagedWorkload runs, and pauses through
// the LateApp's scale, its controller's status writes arriving through
// the watch. A labelled LateApp is opted in, as it would be after a restart.
func TestATargetKindInstalledAfterTheStartIsWatchedOnceServed(t *testing.T) {
	gvk := testenv.LateAppGVK
	cfg := testConfig()
	cfg.TargetKinds = "late.test.napwake.dev/v1/LateApp"
	cfg.SyncPeriod = time.Hour // so only a watch can bring the reconciles below
	s := start(t, cfg, metrics.New())
	ctx := context.Background()
	ns := namespace(t, nil, nil)
	must(t, k8s.Create(ctx, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			TargetRef: napwakev1alpha1.TargetRef{APIVersion: gvk.GroupVersion().String(), Kind: napwakev1alpha1.TargetKind(gvk.Kind), Name: "web"},
		},
	}))
	targetAvailable := func(status metav1.ConditionStatus, reason, message string) func() error {
		return func() error {
			mw, err := getMW(ns, "web")
			if err != nil {
				return err
			}
			c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionTargetAvailable)
			if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message) {
				return fmt.Errorf("TargetAvailable %+v, want %s %s saying %q", c, status, reason, message)
			}
			return nil
		}
	}
	testenv.Eventually(t, "TargetNotScalable, the kind not served", targetAvailable(metav1.ConditionFalse, napwakev1alpha1.ReasonTargetNotScalable, "serves no kind LateApp"))
	if err := phaseIs(ns, "web", napwakev1alpha1.PhaseRunning); err == nil {
		t.Fatal("a ManagedWorkload of a kind not served runs")
	}

	must(t, testenv.InstallLateAppCRD(restCfg))
	must(t, k8s.Create(ctx, testenv.ScalableApp(gvk, ns, "web", 2, true)))
	_, err := testenv.FollowScalableApp(ctx, k8s, gvk, ns, "web")
	must(t, err)
	testenv.Eventually(t, "TargetAvailable, the kind watched", targetAvailable(metav1.ConditionTrue, napwakev1alpha1.ReasonTargetFound, ""))
	testenv.Eventually(t, "Running", func() error { return phaseIs(ns, "web", napwakev1alpha1.PhaseRunning) })

	mw, err := getMW(ns, "web")
	must(t, err)
	mw.Annotations = map[string]string{napwakev1alpha1.AnnotationPauseRequested: s.clock.Now().Format(time.RFC3339)}
	must(t, k8s.Update(ctx, mw))
	testenv.Eventually(t, "the LateApp scaled to 0", func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, u); err != nil {
			return err
		}
		if n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); n != 0 {
			return fmt.Errorf("spec.replicas %d", n)
		}
		return nil
	})
	_, err = testenv.FollowScalableApp(ctx, k8s, gvk, ns, "web")
	must(t, err)
	testenv.Eventually(t, "Paused", func() error { return phaseIs(ns, "web", napwakev1alpha1.PhasePaused) })
	if mw, err := getMW(ns, "web"); err != nil || mw.Status.Pause == nil || mw.Status.Pause.Replicas != 2 {
		t.Fatalf("pause %+v (%v), want 2 replicas saved", mw.Status.Pause, err)
	}

	labelled := testenv.ScalableApp(gvk, ns, "labelled", 1, true)
	labelled.SetLabels(map[string]string{napwakev1alpha1.LabelEnabled: "true"})
	must(t, k8s.Create(ctx, labelled))
	testenv.Eventually(t, "a ManagedWorkload for the labelled LateApp", func() error {
		_, err := getMW(ns, "labelled")
		return err
	})
}
