package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/workload"
	"napwake.dev/shared/testenv"
)

// These tests pause kinds other than Deployment and StatefulSet through
// their scale subresource (docs/pause.md#other-kinds-of-workload), on the
// test kinds of package testenv: ScalableApp (a scale subresource and a
// pod template), NoScaleApp (no scale subresource) and NoSelectorApp (a
// scale without a selector). testenv.FollowScalableApp plays their
// controller and kubelet.

// scalableFixture is a fixture whose ManagedWorkload "web" targets an
// object "web" of gvk, the operator given kinds.
func scalableFixture(t *testing.T, gvk schema.GroupVersionKind, replicas int32, withTemplate bool, kinds ...schema.GroupVersionKind) *fixture {
	t.Helper()
	must(t, testenv.InstallScalableCRDs(restCfg))
	f := newFixture(t, 1) // the namespace, clock and reconciler; its Deployment is not used
	f.r.TargetKinds = kinds
	if gvk.Kind != "Ghost" {
		must(t, k8s.Create(f.ctx, testenv.ScalableApp(gvk, f.ns, "web", replicas, withTemplate)))
		f.followApp(gvk)
	}
	must(t, k8s.Create(f.ctx, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			TargetRef: napwakev1alpha1.TargetRef{APIVersion: gvk.GroupVersion().String(), Kind: napwakev1alpha1.TargetKind(gvk.Kind), Name: "web"},
			IdleAfter: &metav1.Duration{Duration: 10 * time.Minute},
		},
	}))
	f.mw = types.NamespacedName{Namespace: f.ns, Name: "web"}
	return f
}

func (f *fixture) followApp(gvk schema.GroupVersionKind) {
	f.t.Helper()
	_, err := testenv.FollowScalableApp(f.ctx, k8s, gvk, f.ns, "web")
	must(f.t, err)
}

// appReplicas is the object's spec.replicas.
func (f *fixture) appReplicas(gvk schema.GroupVersionKind) int64 {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	must(f.t, k8s.Get(f.ctx, types.NamespacedName{Namespace: f.ns, Name: "web"}, u))
	n, _, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
	must(f.t, err)
	return n
}

func (f *fixture) targetAvailable() *metav1.Condition {
	f.t.Helper()
	c := meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionTargetAvailable)
	if c == nil {
		f.t.Fatal("no TargetAvailable condition")
	}
	return c
}

func TestAKindWithAScaleSubresourcePausesAndWakesToItsSavedCount(t *testing.T) {
	gvk := testenv.ScalableAppGVK
	f := scalableFixture(t, gvk, 3, true, gvk)
	f.runToRunning()
	if c := f.targetAvailable(); c.Status != metav1.ConditionTrue || c.Message != "ScalableApp.test.napwake.dev web exists" {
		t.Fatalf("TargetAvailable %s %q", c.Status, c.Message)
	}

	f.clock.Step(11 * time.Minute)
	f.reconcile() // Pausing: the count saved, routed, scaled to 0 through /scale
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhasePausing || mw.Status.Pause == nil || mw.Status.Pause.Replicas != 3 || f.appReplicas(gvk) != 0 {
		t.Fatalf("phase %q pause %+v replicas %d; want Pausing, 3 saved, 0", mw.Status.Phase, mw.Status.Pause, f.appReplicas(gvk))
	}
	if len(f.router.routedWith) != 1 || f.router.routedWith[0] != "Pausing saved=3 replicas=3" {
		t.Fatalf("routed with %q; want once, the count saved before scaling", f.router.routedWith)
	}
	if tmpl := f.router.templates[0]; tmpl == nil || tmpl.Labels["app"] != "web" || len(tmpl.Spec.Containers) != 1 {
		t.Fatalf("routed with template %+v; want spec.template's", tmpl)
	}
	f.followApp(gvk) // its pods go
	f.reconcile()
	if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhasePaused {
		t.Fatalf("phase %q once its pods went, want Paused", mw.Status.Phase)
	}

	f.clock.Step(time.Minute)
	f.annotate(testenv.ScalableApp(gvk, f.ns, "web", 0, false), types.NamespacedName{Namespace: f.ns, Name: "web"}, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
	f.reconcile()
	if n := f.appReplicas(gvk); n != 3 {
		t.Fatalf("replicas %d after a wake, want the 3 saved", n)
	}
	if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhaseResuming {
		t.Fatalf("phase %q before its pods are Ready, want Resuming", mw.Status.Phase)
	}
	f.followApp(gvk) // its pods come back Ready
	f.reconcile()
	if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhaseRunning || mw.Status.ResumedAt == nil {
		t.Fatalf("phase %q resumedAt %v once Ready, want Running", mw.Status.Phase, mw.Status.ResumedAt)
	}
	// status.savings counts its pause as a Deployment's: the 3 replicas
	// saved, over the minute paused.
	if s := f.managedWorkload().Status.Savings; s == nil || s.Pauses != 1 || s.PausedReplicaSeconds != 3*60 {
		t.Fatalf("savings %+v, want 180 replica-seconds over 1 pause", s)
	}
}

func TestAKindWithoutATemplateIsRoutedByItsSelectorAndSaysSo(t *testing.T) {
	gvk := testenv.ScalableAppGVK
	f := scalableFixture(t, gvk, 2, false, gvk)
	f.runToRunning()
	if c := f.targetAvailable(); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, workload.NoTemplate) {
		t.Fatalf("TargetAvailable %s %q; want True, saying no template could be read", c.Status, c.Message)
	}
	f.clock.Step(11 * time.Minute)
	f.reconcile()
	tmpl := f.router.templates[0]
	if tmpl == nil || tmpl.Labels["app"] != "web" || tmpl.Annotations[workload.AnnotationTemplateFromSelector] != "true" {
		t.Fatalf("routed with template %+v; want the selector's labels, marked made up", tmpl)
	}
	if f.appReplicas(gvk) != 0 {
		t.Fatal("not scaled to 0")
	}
}

func TestAKindNapwakeCannotScaleIsRefusedSayingWhyAndLeftAlone(t *testing.T) {
	ghost := schema.GroupVersionKind{Group: "test.napwake.dev", Version: "v1", Kind: "Ghost"}
	for _, tc := range []struct {
		name  string
		gvk   schema.GroupVersionKind
		kinds []schema.GroupVersionKind
		want  string
	}{
		{"no scale subresource", testenv.NoScaleAppGVK, []schema.GroupVersionKind{testenv.NoScaleAppGVK}, "has no scale subresource"},
		{"an empty scale selector", testenv.NoSelectorAppGVK, []schema.GroupVersionKind{testenv.NoSelectorAppGVK}, "empty status.selector"},
		{"not in --target-kinds", testenv.ScalableAppGVK, nil, "add test.napwake.dev/v1/ScalableApp to --target-kinds"},
		{"a kind that does not exist", ghost, []schema.GroupVersionKind{ghost}, "the API server serves no kind Ghost in test.napwake.dev/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := scalableFixture(t, tc.gvk, 2, true, tc.kinds...)
			f.reconcile()
			f.clock.Step(time.Hour) // long idle: a pause would be due
			if res := f.reconcile(); res.RequeueAfter != f.r.SyncPeriod {
				t.Errorf("requeue after %s, want the sync period", res.RequeueAfter)
			}
			c := f.targetAvailable()
			if c.Status != metav1.ConditionFalse || c.Reason != napwakev1alpha1.ReasonTargetNotScalable || !strings.Contains(c.Message, tc.want) {
				t.Fatalf("TargetAvailable %s %s %q; want False TargetNotScalable saying %q", c.Status, c.Reason, c.Message, tc.want)
			}
			f.wantEvent(napwakev1alpha1.EventTargetNotScalable, tc.want)
			if mw := f.managedWorkload(); mw.Status.Phase == napwakev1alpha1.PhasePausing || mw.Status.Phase == napwakev1alpha1.PhasePaused || mw.Status.Pause != nil {
				t.Fatalf("phase %q pause %+v; want nothing paused", mw.Status.Phase, mw.Status.Pause)
			}
			if f.router.routes != 0 {
				t.Fatal("routed")
			}
			if tc.gvk != ghost {
				if n := f.appReplicas(tc.gvk); n != 2 {
					t.Fatalf("replicas %d, want 2 untouched", n)
				}
			}
			// Deleting the ManagedWorkload is not held up by a target it could never scale.
			must(t, k8s.Delete(f.ctx, f.managedWorkload()))
			f.reconcile()
			testenv.EventuallyTrue(t, "the ManagedWorkload gone", func() bool {
				return k8s.Get(f.ctx, f.mw, &napwakev1alpha1.ManagedWorkload{}) != nil
			})
		})
	}
}

// TestAKindWithoutATemplateIsRoutedToTheDoormanByItsSelector: with the
// real Router, a paused ScalableApp without spec.template has its Service
// (selecting the scale selector's labels) routed to the doorman, without a
// readiness-probe warning it could not make, and unrouted at its wake.
func TestAKindWithoutATemplateIsRoutedToTheDoormanByItsSelector(t *testing.T) {
	gvk := testenv.ScalableAppGVK
	f := scalableFixture(t, gvk, 2, false, gvk)
	f.r.Router = f.realRouter(k8s)
	f.ensure(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	})
	f.runToRunning()
	f.clock.Step(11 * time.Minute)
	f.reconcile()
	f.followApp(gvk)
	f.reconcile()
	routes, slices := f.routed()
	if len(routes) != 1 || routes[0].Service != "web" || len(slices) == 0 {
		t.Fatalf("routes %+v, %d slices; want Service web routed to the doorman", routes, len(slices))
	}
	c := meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest)
	if c == nil || c.Status != metav1.ConditionTrue || strings.Contains(c.Message, "readiness") {
		t.Fatalf("WakeOnRequest %+v; want True, with no readiness-probe warning", c)
	}
	f.clock.Step(time.Minute)
	f.annotate(testenv.ScalableApp(gvk, f.ns, "web", 0, false), types.NamespacedName{Namespace: f.ns, Name: "web"}, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
	f.reconcile()
	f.followApp(gvk)
	f.reconcile()
	if routes, slices := f.routed(); len(routes) != 0 || len(slices) != 0 || f.appReplicas(gvk) != 2 {
		t.Fatalf("after the wake: routes %+v, %d slices, %d replicas; want none, none, 2", routes, len(slices), f.appReplicas(gvk))
	}
}

// TestAKindTheOperatorMayNotScaleIsRefusedNamingRBAC: the operator, as a
// user granted the ScalableApps but not their scale, or their scale only
// to read (the chart's rule missing or cut), gives TargetNotScalable
// naming what it may not do and operator.targetKinds, before any pause is
// recorded, and leaves the replicas alone.
func TestAKindTheOperatorMayNotScaleIsRefusedNamingRBAC(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scale []string // verbs on scalableapps/scale
		want  string
	}{
		{"its scale not readable", nil, "may not read the scale subresource"},
		{"its scale readable, not writable", []string{"get"}, "may not update the scale subresource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gvk := testenv.ScalableAppGVK
			f := scalableFixture(t, gvk, 2, true, gvk)
			user := "napwake-without-scale-" + f.ns
			rules := []rbacv1.PolicyRule{
				{APIGroups: []string{"napwake.dev"}, Resources: []string{"managedworkloads", "managedworkloads/status"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
				{APIGroups: []string{""}, Resources: []string{"pods", "namespaces"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"test.napwake.dev"}, Resources: []string{"scalableapps"}, Verbs: []string{"get", "list", "watch"}},
			}
			if tc.scale != nil {
				rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"test.napwake.dev"}, Resources: []string{"scalableapps/scale"}, Verbs: tc.scale})
			}
			must(t, k8s.Create(f.ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}))
			must(t, k8s.Create(f.ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: user},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			}))
			cfg := rest.CopyConfig(restCfg)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
			limited, err := client.New(cfg, client.Options{Scheme: scheme})
			must(t, err)
			f.r = f.reconciler(limited)
			f.r.TargetKinds = []schema.GroupVersionKind{gvk}
			f.clock.Step(time.Hour) // long idle: a pause would be due

			// RBAC takes a moment to apply.
			testenv.Eventually(t, "refused naming what it may not do", func() error {
				if _, err := f.r.Reconcile(f.ctx, reconcile.Request{NamespacedName: f.mw}); err != nil {
					return err
				}
				c := meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionTargetAvailable)
				if c == nil || c.Reason != napwakev1alpha1.ReasonTargetNotScalable || !strings.Contains(c.Message, tc.want) ||
					!strings.Contains(c.Message, "operator.targetKinds") {
					return fmt.Errorf("TargetAvailable %+v", c)
				}
				return nil
			})
			if mw := f.managedWorkload(); mw.Status.Pause != nil || f.appReplicas(gvk) != 2 {
				t.Fatalf("pause %+v replicas %d; want no pause recorded, 2 untouched", mw.Status.Pause, f.appReplicas(gvk))
			}
		})
	}
}

// TestDeletingThePausedManagedWorkloadOfAnotherKindRestoresIt: the
// finalizer scales a paused ScalableApp back to its saved count through
// its scale subresource before letting the ManagedWorkload go.
func TestDeletingThePausedManagedWorkloadOfAnotherKindRestoresIt(t *testing.T) {
	gvk := testenv.ScalableAppGVK
	f := scalableFixture(t, gvk, 3, true, gvk)
	f.runToRunning()
	f.clock.Step(11 * time.Minute)
	f.reconcile()
	f.followApp(gvk)
	f.reconcile()
	if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhasePaused || f.appReplicas(gvk) != 0 {
		t.Fatalf("phase %q replicas %d, want Paused at 0", mw.Status.Phase, f.appReplicas(gvk))
	}
	must(t, k8s.Delete(f.ctx, f.managedWorkload()))
	f.reconcile()
	if n := f.appReplicas(gvk); n != 3 {
		t.Fatalf("replicas %d once its ManagedWorkload was deleted, want the 3 saved", n)
	}
	testenv.EventuallyTrue(t, "the ManagedWorkload gone", func() bool {
		return k8s.Get(f.ctx, f.mw, &napwakev1alpha1.ManagedWorkload{}) != nil
	})
}
