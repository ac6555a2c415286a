package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/shared/testenv"
)

// These tests run the reconciler against a real kube-apiserver (envtest).
// There is no kube-controller-manager, so nothing turns replicas into pods:
// the tests play that part, setting the Deployment's status (replicas,
// readyReplicas) and creating or deleting Pod objects matching its selector.
// "No pod left" is status.replicas == 0 and no Pod matching the selector.
// Reconcile is called directly, one call at a time, with a fake clock.

var (
	restCfg *rest.Config
	k8s     client.Client
	scheme  = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), napwakev1alpha1.AddToScheme(scheme)); err != nil {
		panic(err)
	}
	os.Exit(testenv.Run(m, func(s *testenv.Suite) (err error) {
		restCfg = s.Config
		k8s, err = client.New(s.Config, client.Options{Scheme: scheme})
		return err
	}))
}

// start is the fake clock's beginning: after the real time, since creationTimestamps
// come from the API server's clock.
var start = time.Now().UTC().Truncate(time.Second).Add(time.Minute)

// fixture is one test's namespace, Deployment, ManagedWorkload and reconciler.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	clock   *clocktesting.FakeClock
	events  *events.FakeRecorder
	metrics *metrics.Metrics
	router  *recordingRouter
	r       *ManagedWorkloadReconciler
	dep     types.NamespacedName
	mw      types.NamespacedName
}

var nsCounter atomic.Int32

func newFixture(t *testing.T, replicas int32) *fixture {
	t.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("test-%d", nsCounter.Add(1))
	t.Logf("namespace %s", ns)
	must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	f := &fixture{
		t: t, ctx: ctx, ns: ns,
		clock:   clocktesting.NewFakeClock(start),
		events:  events.NewFakeRecorder(1000),
		metrics: metrics.New(),
		router:  &recordingRouter{},
		dep:     types.NamespacedName{Namespace: ns, Name: "api"},
		mw:      types.NamespacedName{Namespace: ns, Name: "api"},
	}
	f.r = f.reconciler(k8s)
	// The paused replica-seconds read this namespace's pauses under way.
	must(t, f.metrics.Register(prometheus.NewRegistry(), client.NewNamespacedClient(k8s, ns), f.clock))
	must(t, k8s.Create(ctx, deployment(ns, "api", replicas)))
	f.setPods(replicas, replicas)
	must(t, k8s.Create(ctx, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"},
			IdleAfter: &metav1.Duration{Duration: 10 * time.Minute},
		},
	}))
	return f
}

func (f *fixture) reconciler(c client.Client) *ManagedWorkloadReconciler {
	return &ManagedWorkloadReconciler{
		Client: c, APIReader: c, Clock: f.clock, Recorder: f.events, Router: f.router, Metrics: f.metrics,
		DefaultIdleAfter: 30 * time.Minute, SyncPeriod: time.Minute,
	}
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
			},
		},
	}
}

// reconcile runs one Reconcile and fails the test on an error.
func (f *fixture) reconcile() reconcile.Result {
	f.t.Helper()
	res, err := f.r.Reconcile(f.ctx, reconcile.Request{NamespacedName: f.mw})
	if err != nil {
		f.t.Fatalf("Reconcile: %v", err)
	}
	return res
}

// setPods plays the Deployment controller and kubelet: status.replicas and
// readyReplicas, and as many Pod objects as status.replicas, ready of them
// Ready.
func (f *fixture) setPods(replicas, ready int32) {
	f.t.Helper()
	setDeploymentPods(f.ctx, f.t, f.dep, replicas, ready)
}

// setDeploymentPods plays the Deployment controller and kubelet for the
// Deployment at key (made by deployment): its status, and as many pods
// with its labels as replicas, the first ready of them Ready. The operator
// takes Running from the pods read live, as the status may still count a
// pod that is leaving.
func setDeploymentPods(ctx context.Context, t testing.TB, key types.NamespacedName, replicas, ready int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	must(t, k8s.Get(ctx, key, d))
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = replicas, ready, ready
	d.Status.ObservedGeneration = d.Generation
	must(t, k8s.Status().Update(ctx, d))
	var pods corev1.PodList
	must(t, k8s.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)))
	for i := int32(len(pods.Items)); i < replicas; i++ {
		p := podFor(key.Namespace)
		p.GenerateName, p.Labels = key.Name+"-", d.Spec.Selector.MatchLabels
		must(t, k8s.Create(ctx, p))
		pods.Items = append(pods.Items, *p)
	}
	for i := int(replicas); i < len(pods.Items); i++ {
		// Unscheduled pods go at once: no kubelet has to confirm.
		must(t, client.IgnoreNotFound(k8s.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0))))
	}
	for i := range min(int(replicas), len(pods.Items)) {
		setPodReady(ctx, t, &pods.Items[i], int32(i) < ready)
	}
}

// setPodReady plays the kubelet: p's Ready condition, written unless it
// already says so (a test may have written the kubelet's times itself).
func setPodReady(ctx context.Context, t testing.TB, p *corev1.Pod, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == status {
			return
		}
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	must(t, k8s.Status().Update(ctx, p))
}

// followSpec plays the Deployment controller once: pods to match spec.replicas, all Ready.
func (f *fixture) followSpec() {
	f.t.Helper()
	n := replicasOf(f.deployment().Spec.Replicas)
	f.setPods(n, n)
}

func (f *fixture) deployment() *appsv1.Deployment {
	f.t.Helper()
	d := &appsv1.Deployment{}
	must(f.t, k8s.Get(f.ctx, f.dep, d))
	return d
}

func (f *fixture) managedWorkload() *napwakev1alpha1.ManagedWorkload {
	f.t.Helper()
	mw := &napwakev1alpha1.ManagedWorkload{}
	must(f.t, k8s.Get(f.ctx, f.mw, mw))
	return mw
}

func (f *fixture) annotate(obj client.Object, key types.NamespacedName, k, v string) {
	f.t.Helper()
	must(f.t, k8s.Get(f.ctx, key, obj))
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	obj.SetAnnotations(a)
	must(f.t, k8s.Patch(f.ctx, obj, patch))
}

func (f *fixture) stamp() string { return f.clock.Now().UTC().Format(time.RFC3339) }

// wantEvent finds an event with reason whose message contains text.
func (f *fixture) wantEvent(reason, text string) {
	f.t.Helper()
	var seen []string
	for {
		select {
		case e := <-f.events.Events:
			if strings.Contains(e, " "+reason+" ") && strings.Contains(e, text) {
				return
			}
			seen = append(seen, e)
		default:
			f.t.Fatalf("no %s event saying %q; saw %q", reason, text, seen)
		}
	}
}

// runToRunning reconciles a new ManagedWorkload into Running.
func (f *fixture) runToRunning() {
	f.t.Helper()
	f.reconcile()
	if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhaseRunning {
		f.t.Fatalf("phase %q, want Running", mw.Status.Phase)
	}
}

// pauseIt takes a Running workload to Paused: idle past pauseAt, then the
// Deployment controller's part.
func (f *fixture) pauseIt() {
	f.t.Helper()
	f.clock.Step(11 * time.Minute)
	f.reconcile()
	f.followSpec()
	f.reconcile()
	if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhasePaused {
		f.t.Fatalf("phase %q after pausing, want Paused", mw.Status.Phase)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// recordingRouter counts calls, and can check what the pause had persisted
// when it was asked to route. With writes, Route and Unroute patch
// status.doorman and the WakeOnRequest condition as the real Router does:
// a merge patch guarded by resourceVersion, updating mw in place.
type recordingRouter struct {
	routes, unroutes, finalizes int
	// routedWith is the replica count the target had, and the pause saved, at each Route.
	routedWith []string
	// templates are the pod templates each Route was given.
	templates []*corev1.PodTemplateSpec
	writes    bool
	// before is mw as the last Route got it, before its write.
	before *napwakev1alpha1.ManagedWorkload
}

// routerRoute is the route the recordingRouter writes.
var routerRoute = napwakev1alpha1.Route{Service: "api", Port: 80, DoormanPort: 20001}

func (r *recordingRouter) write(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, ds *napwakev1alpha1.DoormanStatus, status metav1.ConditionStatus, reason string) error {
	if !r.writes {
		return nil
	}
	base := mw.DeepCopy()
	mw.Status.Doorman = ds
	meta.SetStatusCondition(&mw.Status.Conditions, metav1.Condition{
		Type: napwakev1alpha1.ConditionWakeOnRequest, Status: status, Reason: reason, Message: "as the router says", ObservedGeneration: mw.Generation,
	})
	return k8s.Status().Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

func (r *recordingRouter) Route(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, tmpl *corev1.PodTemplateSpec) (time.Duration, error) {
	r.routes++
	fresh := &napwakev1alpha1.ManagedWorkload{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mw), fresh); err != nil {
		return 0, err
	}
	key := types.NamespacedName{Namespace: mw.Namespace, Name: mw.Spec.TargetRef.Name}
	var replicas *int32
	r.templates = append(r.templates, tmpl)
	switch {
	case !mw.Spec.TargetRef.IsApps():
		gvk, err := mw.Spec.TargetRef.GroupVersionKind()
		if err != nil {
			return 0, err
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := k8s.Get(ctx, key, u); err != nil {
			return 0, err
		}
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		replicas = ptr.To(int32(n))
	case mw.Spec.TargetRef.Kind == napwakev1alpha1.KindStatefulSet:
		s := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, key, s); err != nil {
			return 0, err
		}
		replicas = s.Spec.Replicas
	default:
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, key, d); err != nil {
			return 0, err
		}
		replicas = d.Spec.Replicas
	}
	saved := int32(-1)
	if fresh.Status.Pause != nil {
		saved = fresh.Status.Pause.Replicas
	}
	r.routedWith = append(r.routedWith, fmt.Sprintf("%s saved=%d replicas=%d", fresh.Status.Phase, saved, replicasOf(replicas)))
	r.before = mw.DeepCopy()
	return 0, r.write(ctx, mw, &napwakev1alpha1.DoormanStatus{Routes: []napwakev1alpha1.Route{routerRoute}},
		metav1.ConditionTrue, napwakev1alpha1.ReasonDoormanRouted)
}

func (r *recordingRouter) Unroute(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) (time.Duration, error) {
	r.unroutes++
	return 0, r.write(ctx, mw, nil, metav1.ConditionFalse, napwakev1alpha1.ReasonNotPaused)
}

func (r *recordingRouter) Finalize(context.Context, *napwakev1alpha1.ManagedWorkload) (bool, time.Duration, error) {
	r.finalizes++
	return true, 0, nil
}

func (r *recordingRouter) SetupWithManager(ctrl.Manager) error { return nil }
