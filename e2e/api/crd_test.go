// Package api proves the ManagedWorkload CRD against a real kube-apiserver:
// what it defaults, that every invalid object is refused with a message
// that names the field, and what Argo CD's health check of
// docs/gitops.md reads from its objects in each phase.
package api

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
)

var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(s *testenv.Suite) (err error) {
		scheme := runtime.NewScheme()
		_ = napwakev1alpha1.AddToScheme(scheme)
		k8s, err = client.New(s.Config, client.Options{Scheme: scheme})
		return err
	}))
}

func minimal(name string) *napwakev1alpha1.ManagedWorkload {
	return &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"},
		},
	}
}

func TestMinimalManagedWorkloadIsAcceptedAndDefaulted(t *testing.T) {
	ctx := context.Background()
	mw := minimal("defaults")
	if err := k8s.Create(ctx, mw); err != nil {
		t.Fatalf("creating a minimal ManagedWorkload: %v", err)
	}
	got := &napwakev1alpha1.ManagedWorkload{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mw), got); err != nil {
		t.Fatal(err)
	}
	w := got.Spec.Wake
	if w.Mode != napwakev1alpha1.WakeRequest {
		t.Errorf("wake.mode defaulted to %q, want Request", w.Mode)
	}
	if w.Page == nil || !*w.Page {
		t.Errorf("wake.page defaulted to %v, want true", w.Page)
	}
	if w.MaxWait == nil || w.MaxWait.Duration != napwakev1alpha1.DefaultMaxWait {
		t.Errorf("wake.maxWait defaulted to %v, want apis' DefaultMaxWait %v", w.MaxWait, napwakev1alpha1.DefaultMaxWait)
	}
	if got.Spec.IdleAfter != nil {
		t.Errorf("idleAfter defaulted to %v; it must stay unset so the operator's --default-idle-after applies", got.Spec.IdleAfter)
	}
}

// TestTheCRDsBoundsAreTheAPIsConstants holds the CRD's markers and the
// constants the operator and the doorman use to the same numbers: each bound
// is accepted, and the next second past it refused naming the field.
func TestTheCRDsBoundsAreTheAPIsConstants(t *testing.T) {
	for i, tc := range []struct {
		name   string
		spec   napwakev1alpha1.ManagedWorkloadSpec
		accept bool
		field  string
	}{
		{"maxWait at MaxMaxWait", napwakev1alpha1.ManagedWorkloadSpec{Wake: napwakev1alpha1.WakeSpec{MaxWait: &metav1.Duration{Duration: napwakev1alpha1.MaxMaxWait}}}, true, ""},
		{"maxWait a second past MaxMaxWait", napwakev1alpha1.ManagedWorkloadSpec{Wake: napwakev1alpha1.WakeSpec{MaxWait: &metav1.Duration{Duration: napwakev1alpha1.MaxMaxWait + time.Second}}}, false, "spec.wake.maxWait"},
		{"idleAfter at MinIdleAfter", napwakev1alpha1.ManagedWorkloadSpec{IdleAfter: &metav1.Duration{Duration: napwakev1alpha1.MinIdleAfter}}, true, ""},
		{"idleAfter a second under MinIdleAfter", napwakev1alpha1.ManagedWorkloadSpec{IdleAfter: &metav1.Duration{Duration: napwakev1alpha1.MinIdleAfter - time.Second}}, false, "spec.idleAfter"},
		{"idleAfter at MaxIdleAfter", napwakev1alpha1.ManagedWorkloadSpec{IdleAfter: &metav1.Duration{Duration: napwakev1alpha1.MaxIdleAfter}}, true, ""},
		{"idleAfter a second past MaxIdleAfter", napwakev1alpha1.ManagedWorkloadSpec{IdleAfter: &metav1.Duration{Duration: napwakev1alpha1.MaxIdleAfter + time.Second}}, false, "spec.idleAfter"},
		{"the forecast acting: autoResume and pauseEarly on, in Observe mode", napwakev1alpha1.ManagedWorkloadSpec{Forecast: &napwakev1alpha1.ForecastSpec{
			AutoResume: true, PauseEarly: true, Mode: napwakev1alpha1.ForecastObserve, TimeZone: "America/New_York", LearnFrom: napwakev1alpha1.LearnFromActivity}}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mw := minimal(fmt.Sprintf("bounds-%d", i))
			tc.spec.TargetRef = mw.Spec.TargetRef
			mw.Spec = tc.spec
			err := k8s.Create(context.Background(), mw)
			switch {
			case tc.accept && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.accept && (err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field)):
				t.Fatalf("want an Invalid error naming %s, got %v", tc.field, err)
			}
		})
	}
}

// TestInvalidManagedWorkloadsAreRefused creates each object as unstructured
// JSON, so values Go's types could not even hold reach the server too.
func TestInvalidManagedWorkloadsAreRefused(t *testing.T) {
	tests := []struct {
		name      string
		spec      map[string]any
		wantField string // the message must name this field
	}{
		{"a missing targetRef", map[string]any{}, "spec.targetRef"},
		{"a targetRef without a name", map[string]any{"targetRef": map[string]any{"kind": "Deployment"}}, "spec.targetRef.name"},
		{"a kind other than Deployment and StatefulSet without apiVersion", map[string]any{"targetRef": map[string]any{"kind": "Rollout", "name": "api"}}, "targetRef.apiVersion is required"},
		{"a kind that is not a kind's name", map[string]any{"targetRef": map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "rollout", "name": "api"}}, "spec.targetRef.kind"},
		{"an apiVersion that is not group/version", map[string]any{"targetRef": map[string]any{"apiVersion": "argoproj.io/v1alpha1/Rollout", "kind": "Rollout", "name": "api"}}, "spec.targetRef.apiVersion"},
		{"a target name that is not a DNS name", map[string]any{"targetRef": map[string]any{"kind": "Deployment", "name": "API_1"}}, "spec.targetRef.name"},
		{"a forecast mode that is neither Act nor Observe", withTarget(map[string]any{"forecast": map[string]any{"mode": "Sometimes"}}), "spec.forecast.mode"},
		{"a forecast learnFrom that is neither people nor activity", withTarget(map[string]any{"forecast": map[string]any{"learnFrom": "robots"}}), "spec.forecast.learnFrom"},
		{"maxWait over 1h", withTarget(map[string]any{"wake": map[string]any{"maxWait": "61m"}}), "spec.wake.maxWait"},
		{"maxWait of zero", withTarget(map[string]any{"wake": map[string]any{"maxWait": "0s"}}), "spec.wake.maxWait"},
		{"maxWait that is not a duration", withTarget(map[string]any{"wake": map[string]any{"maxWait": "two minutes"}}), "spec.wake.maxWait"},
		{"idleAfter under 1m", withTarget(map[string]any{"idleAfter": "30s"}), "spec.idleAfter"},
		{"idleAfter over 168h", withTarget(map[string]any{"idleAfter": "169h"}), "spec.idleAfter"},
		{"an unknown wake mode", withTarget(map[string]any{"wake": map[string]any{"mode": "Never"}}), "spec.wake.mode"},
		{"a lower-case wake mode", withTarget(map[string]any{"wake": map[string]any{"mode": "ask"}}), "spec.wake.mode"},
		{"a dependency name that is not a DNS label", withTarget(map[string]any{"dependencies": []any{map[string]any{"name": "Postgres.DB"}}}), "spec.dependencies[0].name"},
		{"too many dependencies", withTarget(map[string]any{"dependencies": manyDeps(65)}), "spec.dependencies"},
		{"an empty Prometheus query", withTarget(map[string]any{"activity": map[string]any{"prometheus": map[string]any{"query": ""}}}), "spec.activity.prometheus.query"},
		{"a time zone with spaces", withTarget(map[string]any{"forecast": map[string]any{"timeZone": "Europe/Paris; drop"}}), "spec.forecast.timeZone"},
		{"a window at 25:00", withTarget(schedule("Mon-Fri 25:00-19:00")), "spec.schedule.awake[0]"},
		{"a window without hours", withTarget(schedule("Sun-Mon")), "spec.schedule.awake[0]"},
		{"a second window with an unknown day", withTarget(schedule("Mon 08:00-12:00", "Someday 08:00-12:00")), "spec.schedule.awake[1]"},
		{"a window at minute 60", withTarget(schedule("Mon 08:60-12:00")), "spec.schedule.awake[0]"},
		{"a schedule without windows", withTarget(schedule()), "spec.schedule.awake"},
		{"too many windows", withTarget(schedule(manyWindows(33)...)), "spec.schedule.awake"},
		{"a schedule zone with spaces", withTarget(map[string]any{"schedule": map[string]any{"awake": []any{"Mon 08:00-12:00"}, "timeZone": "Europe/Paris; drop"}}), "spec.schedule.timeZone"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": napwakev1alpha1.GroupVersion.String(),
				"kind":       "ManagedWorkload",
				"metadata":   map[string]any{"name": fmt.Sprintf("invalid-%d", i), "namespace": "default"},
				"spec":       tt.spec,
			}}
			err := k8s.Create(context.Background(), u)
			if err == nil {
				t.Fatalf("the API server accepted %s", tt.name)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("the message does not name %s: %v", tt.wantField, err)
			}
		})
	}
}

// TestATargetOfAnyKindWithItsAPIVersionIsAccepted: a kind other than the
// apps/v1 two is accepted with its apiVersion (whether the operator can
// pause it is said in its status, TargetNotScalable), and a Deployment
// with apps/v1 spelled out as without.
func TestATargetOfAnyKindWithItsAPIVersionIsAccepted(t *testing.T) {
	for i, ref := range []napwakev1alpha1.TargetRef{
		{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web"},
		{APIVersion: "apps/v1", Kind: napwakev1alpha1.KindDeployment, Name: "api"},
		{APIVersion: "v1", Kind: "ReplicationController", Name: "rc"},
	} {
		mw := &napwakev1alpha1.ManagedWorkload{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("any-kind-%d", i), Namespace: "default"},
			Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: ref},
		}
		if err := k8s.Create(context.Background(), mw); err != nil {
			t.Errorf("targetRef %+v refused: %v", ref, err)
		}
	}
}

func TestTargetRefIsImmutable(t *testing.T) {
	ctx := context.Background()
	mw := minimal("immutable")
	if err := k8s.Create(ctx, mw); err != nil {
		t.Fatal(err)
	}
	mw.Spec.TargetRef.Name = "other"
	err := k8s.Update(ctx, mw)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "targetRef is immutable") {
		t.Fatalf("changing targetRef: want an Invalid error saying targetRef is immutable, got %v", err)
	}
	// Other fields still change.
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mw), mw); err != nil {
		t.Fatal(err)
	}
	mw.Spec.Wake.Page = ptr.To(false)
	if err := k8s.Update(ctx, mw); err != nil {
		t.Fatalf("changing wake.page must be allowed: %v", err)
	}
}

// TestTargetRefMayOnlySpellOutAppsV1 sends updates of targetRef to the API
// server: a Deployment's or StatefulSet's apiVersion may be added as
// apps/v1 or dropped (they mean the same), and nothing else of it changes.
func TestTargetRefMayOnlySpellOutAppsV1(t *testing.T) {
	deployment := napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"}
	apps := func(r napwakev1alpha1.TargetRef) napwakev1alpha1.TargetRef { r.APIVersion = "apps/v1"; return r }
	statefulSet := napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindStatefulSet, Name: "db"}
	rollout := napwakev1alpha1.TargetRef{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web"}
	for i, tc := range []struct {
		name     string
		from, to napwakev1alpha1.TargetRef
		accepted bool
	}{
		{"a Deployment's apiVersion spelled out as apps/v1", deployment, apps(deployment), true},
		{"a Deployment's apps/v1 left out", apps(deployment), deployment, true},
		{"a StatefulSet's apiVersion spelled out as apps/v1", statefulSet, apps(statefulSet), true},
		{"a Deployment's apiVersion set to another group's", deployment, napwakev1alpha1.TargetRef{APIVersion: "apps.example.com/v1", Kind: napwakev1alpha1.KindDeployment, Name: "api"}, false},
		{"a Deployment's name", apps(deployment), napwakev1alpha1.TargetRef{APIVersion: "apps/v1", Kind: napwakev1alpha1.KindDeployment, Name: "other"}, false},
		{"a Deployment made a StatefulSet", deployment, napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindStatefulSet, Name: "api"}, false},
		{"a Rollout's apiVersion", rollout, napwakev1alpha1.TargetRef{APIVersion: "argoproj.io/v1", Kind: "Rollout", Name: "web"}, false},
		{"a Rollout's apiVersion made apps/v1", rollout, napwakev1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Rollout", Name: "web"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mw := minimal(fmt.Sprintf("spell-out-%d", i))
			mw.Spec.TargetRef = tc.from
			if err := k8s.Create(ctx, mw); err != nil {
				t.Fatal(err)
			}
			mw.Spec.TargetRef = tc.to
			err := k8s.Update(ctx, mw)
			switch {
			case tc.accepted && err != nil:
				t.Fatalf("targetRef %+v to %+v refused: %v", tc.from, tc.to, err)
			case !tc.accepted && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "targetRef is immutable")):
				t.Fatalf("targetRef %+v to %+v: want an Invalid error saying targetRef is immutable, got %v", tc.from, tc.to, err)
			}
		})
	}
}

func TestStatusIsASubresource(t *testing.T) {
	ctx := context.Background()
	mw := minimal("status")
	mw.Status.Phase = napwakev1alpha1.PhasePaused
	if err := k8s.Create(ctx, mw); err != nil {
		t.Fatal(err)
	}
	got := &napwakev1alpha1.ManagedWorkload{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mw), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != "" {
		t.Fatalf("a create set status.phase to %q; status must only change through the subresource", got.Status.Phase)
	}
	got.Status.Phase = napwakev1alpha1.PhasePaused
	if err := k8s.Status().Update(ctx, got); err != nil {
		t.Fatalf("updating status through the subresource: %v", err)
	}
	got.Status.Phase = "Sleeping"
	if err := k8s.Status().Update(ctx, got); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.phase") {
		t.Fatalf("an unknown phase: want Invalid naming status.phase, got %v", err)
	}
}

func withTarget(spec map[string]any) map[string]any {
	spec["targetRef"] = map[string]any{"kind": "Deployment", "name": "api"}
	return spec
}

func manyDeps(n int) []any {
	deps := make([]any, n)
	for i := range deps {
		deps[i] = map[string]any{"name": fmt.Sprintf("dep-%d", i)}
	}
	return deps
}

func schedule(windows ...string) map[string]any {
	awake := []any{}
	for _, w := range windows {
		awake = append(awake, w)
	}
	return map[string]any{"schedule": map[string]any{"awake": awake}}
}

func manyWindows(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Mon %02d:00-%02d:30", i%24, i%24)
	}
	return out
}

// TestScheduleWindowsTheOperatorReadsAreAccepted: the API server lets
// through what the operator's parser reads, zone defaulted to UTC.
func TestScheduleWindowsTheOperatorReadsAreAccepted(t *testing.T) {
	ctx := context.Background()
	mw := minimal("schedule")
	mw.Spec.Schedule = &napwakev1alpha1.ScheduleSpec{Awake: []napwakev1alpha1.AwakeWindow{
		"Mon-Fri 08:00-19:00", "sat 9:30-24:00", "Friday-Monday 00:00-06:00", " Sun  10:00-11:00 ",
	}}
	if err := k8s.Create(ctx, mw); err != nil {
		t.Fatalf("creating a ManagedWorkload with a schedule: %v", err)
	}
	got := &napwakev1alpha1.ManagedWorkload{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mw), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Schedule.TimeZone != "UTC" {
		t.Errorf("schedule.timeZone defaulted to %q, want UTC", got.Spec.Schedule.TimeZone)
	}
}
