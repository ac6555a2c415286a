package restore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
)

var (
	k8s    client.Client
	config *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(s *testenv.Suite) error {
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return err
		}
		if err := napwakev1alpha1.AddToScheme(scheme); err != nil {
			return err
		}
		config = s.Config
		// KEDA's real ScaledObject CRD (v2.17.0; where it came from is in
		// that directory's README), for releasing what Napwake held.
		if _, err := envtest.InstallCRDs(s.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join("..", "..", "operator", "internal", "controller", "testdata", "keda")}, ErrorIfPathMissing: true,
		}); err != nil {
			return err
		}
		var err error
		k8s, err = client.New(s.Config, client.Options{Scheme: scheme})
		return err
	}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// env is one namespace of workloads in the states an uninstall meets.
type env struct {
	t   *testing.T
	ctx context.Context
	ns  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: t.Context(), ns: fmt.Sprintf("restore-%d", time.Now().UnixNano()%1e9)}
	must(t, k8s.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}))
	return e
}

// object is an empty object of kind named name in the namespace.
func (e *env) object(kind napwakev1alpha1.TargetKind, name string) client.Object {
	meta := metav1.ObjectMeta{Namespace: e.ns, Name: name}
	if kind == napwakev1alpha1.KindStatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: meta}
	}
	return &appsv1.Deployment{ObjectMeta: meta}
}

// workload creates a Deployment or StatefulSet at replicas.
func (e *env) workload(kind napwakev1alpha1.TargetKind, name string, replicas int32) {
	labels := map[string]string{"app": name}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
	}
	obj := e.object(kind, name)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec = appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}
	case *appsv1.StatefulSet:
		o.Spec = appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}
	}
	must(e.t, k8s.Create(e.ctx, obj))
}

func (e *env) deployment(name string, replicas int32) {
	e.workload(napwakev1alpha1.KindDeployment, name, replicas)
}

// managed writes a ManagedWorkload for target in phase, with the operator's
// finalizer and, unless saved is negative, a pause record of saved replicas.
func (e *env) managed(name string, kind napwakev1alpha1.TargetKind, phase napwakev1alpha1.Phase, saved int32) {
	mw := &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Finalizers: []string{napwakev1alpha1.Finalizer}},
		Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: kind, Name: name}},
	}
	must(e.t, k8s.Create(e.ctx, mw))
	mw.Status.Phase = phase
	if saved >= 0 {
		mw.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: metav1.Now(), Replicas: saved, Reason: napwakev1alpha1.PauseIdle}
	}
	must(e.t, k8s.Status().Update(e.ctx, mw))
}

// slice writes an EndpointSlice of service managed by manager, for workload.
func (e *env) slice(name, service, manager, workload string) {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: map[string]string{
			napwakev1alpha1.LabelServiceName:            service,
			napwakev1alpha1.LabelEndpointSliceManagedBy: manager,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.9"}}},
	}
	if workload != "" {
		s.Labels[napwakev1alpha1.LabelWorkload] = workload
	}
	must(e.t, k8s.Create(e.ctx, s))
}

func (e *env) replicas(name string) int32 { return e.replicasOf(napwakev1alpha1.KindDeployment, name) }

func (e *env) replicasOf(kind napwakev1alpha1.TargetKind, name string) int32 {
	obj := e.object(kind, name)
	must(e.t, k8s.Get(e.ctx, client.ObjectKeyFromObject(obj), obj))
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return *o.Spec.Replicas
	case *appsv1.StatefulSet:
		return *o.Spec.Replicas
	}
	return -1
}

// setReady stands in for the Deployment and StatefulSet controllers, which
// envtest does not run: it reports ready pods as they would once pods start.
func (e *env) setReady(kind napwakev1alpha1.TargetKind, name string, ready int32) {
	obj := e.object(kind, name)
	must(e.t, k8s.Get(e.ctx, client.ObjectKeyFromObject(obj), obj))
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Status.Replicas, o.Status.ReadyReplicas, o.Status.AvailableReplicas = ready, ready, ready
	case *appsv1.StatefulSet:
		o.Status.Replicas, o.Status.ReadyReplicas, o.Status.AvailableReplicas = ready, ready, ready
	}
	must(e.t, k8s.Status().Update(e.ctx, obj))
}

func (e *env) slices() []string {
	var list discoveryv1.EndpointSliceList
	must(e.t, k8s.List(e.ctx, &list, client.InNamespace(e.ns)))
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

func outcomeOf(r Report, name string) Outcome {
	for _, o := range r.Outcomes {
		if o.ManagedWorkload.Name == name {
			return o
		}
	}
	return Outcome{}
}

// TestAnUninstallLeavesEveryWorkloadAtItsSavedCount is the pre-delete hook's
// run: paused, pausing and waking workloads go back to what their pause
// saved, a running one and one scaled by hand above its record are not
// touched, every Napwake EndpointSlice goes (a stray one too) while
// Kubernetes' own stay, the operator is stopped first, and no finalizer is
// left for a gone operator to remove.
func TestAnUninstallLeavesEveryWorkloadAtItsSavedCount(t *testing.T) {
	e := newEnv(t)
	e.deployment("paused", 0)
	e.managed("paused", napwakev1alpha1.KindDeployment, napwakev1alpha1.PhasePaused, 3)
	e.deployment("pausing", 1) // the pause had scaled one of two away
	e.managed("pausing", napwakev1alpha1.KindDeployment, napwakev1alpha1.PhasePausing, 2)
	e.deployment("waking", 2) // already scaled back: nothing to do but routes
	e.managed("waking", napwakev1alpha1.KindDeployment, napwakev1alpha1.PhaseResuming, 2)
	e.deployment("running", 0) // at 0 by its owner's choice, not paused
	e.managed("running", napwakev1alpha1.KindDeployment, napwakev1alpha1.PhaseRunning, -1)
	e.managed("gone", napwakev1alpha1.KindDeployment, napwakev1alpha1.PhasePaused, 2) // its target was deleted
	e.workload(napwakev1alpha1.KindStatefulSet, "db", 0)
	e.managed("db", napwakev1alpha1.KindStatefulSet, napwakev1alpha1.PhasePaused, 1)
	e.slice("paused-napwake-ipv4", "paused", napwakev1alpha1.EndpointSliceManager, "paused")
	e.slice("pausing-napwake-ipv4", "pausing", napwakev1alpha1.EndpointSliceManager, "pausing")
	e.slice("waking-napwake-ipv4", "waking", napwakev1alpha1.EndpointSliceManager, "waking")
	e.slice("gone-napwake-ipv4", "gone", napwakev1alpha1.EndpointSliceManager, "gone")
	e.slice("stray-napwake-ipv4", "stray", napwakev1alpha1.EndpointSliceManager, "")
	e.slice("paused-abcde", "paused", napwakev1alpha1.EndpointSliceControllerManager, "")
	// The operator: its Deployment in its own namespace, to be stopped first.
	op := &env{t: t, ctx: e.ctx, ns: e.ns}
	op.deployment("napwake-operator", 1)
	e.deployment("napwake-forwarder-paused", 1)
	forwarder := e.object(napwakev1alpha1.KindDeployment, "napwake-forwarder-paused")
	must(t, k8s.Get(e.ctx, client.ObjectKeyFromObject(forwarder), forwarder))
	forwarder.SetLabels(map[string]string{napwakev1alpha1.LabelAppName: napwakev1alpha1.AppNameForwarder})
	must(t, k8s.Update(e.ctx, forwarder))

	// A Ready pod comes for each workload scaled back, as the Deployment
	// controller would report it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.setReady(napwakev1alpha1.KindDeployment, "waking", 2)
		for _, w := range []struct {
			kind napwakev1alpha1.TargetKind
			name string
		}{{napwakev1alpha1.KindDeployment, "paused"}, {napwakev1alpha1.KindDeployment, "pausing"}, {napwakev1alpha1.KindStatefulSet, "db"}} {
			testenv.EventuallyTrue(t, w.name+" scaled back", func() bool { return e.replicasOf(w.kind, w.name) > 0 })
			e.setReady(w.kind, w.name, 1)
		}
	}()
	var progress bytes.Buffer
	r, err := Run(e.ctx, k8s, Options{
		Namespace: e.ns, ReadyTimeout: 20 * time.Second, Poll: 50 * time.Millisecond, Progress: &progress,
		StopOperator: &types.NamespacedName{Namespace: e.ns, Name: "napwake-operator"},
	})
	<-done
	t.Log(progress.String())
	must(t, err)
	must(t, r.Err())

	for name, want := range map[string]int32{"paused": 3, "pausing": 2, "waking": 2, "running": 0, "napwake-operator": 0} {
		if got := e.replicas(name); got != want {
			t.Errorf("%s has %d replicas after the restore, want %d", name, got, want)
		}
	}
	if got := e.replicasOf(napwakev1alpha1.KindStatefulSet, "db"); got != 1 {
		t.Errorf("StatefulSet db has %d replicas after the restore, want its saved 1", got)
	}
	if o := outcomeOf(r, "paused"); o.From != 0 || o.To != 3 || o.Ready != 1 || o.Slices != 1 {
		t.Errorf("paused's outcome = %+v, want 0 → 3, 1 Ready, 1 slice removed", o)
	}
	if got := e.slices(); len(got) != 1 || got[0] != "paused-abcde" {
		t.Errorf("EndpointSlices left: %v, want only Kubernetes' own paused-abcde", got)
	}
	if r.Strays != 1 {
		t.Errorf("Strays = %d, want 1", r.Strays)
	}
	if err := k8s.Get(e.ctx, client.ObjectKeyFromObject(forwarder), forwarder); !apierrors.IsNotFound(err) || r.Forwarders != 1 {
		t.Errorf("the NEG forwarder is still there (get: %v, %d removed), want it removed", err, r.Forwarders)
	}
	var list napwakev1alpha1.ManagedWorkloadList
	must(t, k8s.List(e.ctx, &list, client.InNamespace(e.ns)))
	for _, mw := range list.Items {
		if len(mw.Finalizers) != 0 {
			t.Errorf("%s keeps finalizers %v: a gone operator would never remove them", mw.Name, mw.Finalizers)
		}
		// What a later install reads: nothing left to finish, no old
		// pause request newer than the last wake.
		if mw.Status.Phase != napwakev1alpha1.PhaseRunning || mw.Status.Pause != nil || (mw.Name != "running") != (mw.Status.ResumedAt != nil) {
			t.Errorf("%s's status after the restore: phase %s, pause %v, resumedAt %v; want Running, no pause, resumed now unless it was running", mw.Name, mw.Status.Phase, mw.Status.Pause, mw.Status.ResumedAt)
		}
	}
	for _, want := range []string{"Stopping the operator", "6 ManagedWorkloads in namespace " + e.ns + "; 3 paused or pausing", "paused: Deployment/paused 0 → 3 replicas", "Removed 5 EndpointSlices"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("the progress does not say %q:\n%s", want, progress.String())
		}
	}

	// A second run finds nothing left to do.
	r, err = Run(e.ctx, k8s, Options{Namespace: e.ns, ReadyTimeout: time.Second, Poll: 50 * time.Millisecond})
	must(t, err)
	for _, o := range r.Outcomes {
		if o.Scaled() || o.Slices != 0 {
			t.Errorf("the second run did something for %s: %+v", o.ManagedWorkload, o)
		}
	}
}

// TestAWorkloadWithNoReadyPodIsNamedNotLost: a workload whose pods do not
// become Ready in time is still scaled back and its routes still go (the
// doorman is about to), and the run names it.
func TestAWorkloadWithNoReadyPodIsNamedNotLost(t *testing.T) {
	e := newEnv(t)
	e.deployment("slow", 0)
	e.managed("slow", napwakev1alpha1.KindDeployment, napwakev1alpha1.PhasePaused, 2)
	e.slice("slow-napwake-ipv4", "slow", napwakev1alpha1.EndpointSliceManager, "slow")
	var progress bytes.Buffer
	start := time.Now()
	r, err := Run(e.ctx, k8s, Options{Namespace: e.ns, ReadyTimeout: 500 * time.Millisecond, Poll: 50 * time.Millisecond, Progress: &progress})
	must(t, err)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the run took %s with a 500ms bound on the wait", took)
	}
	o := outcomeOf(r, "slow")
	if !o.Waiting() || o.To != 2 || e.replicas("slow") != 2 {
		t.Errorf("slow's outcome = %+v (replicas %d), want scaled to 2 and waiting", o, e.replicas("slow"))
	}
	if len(e.slices()) != 0 {
		t.Errorf("slices left: %v", e.slices())
	}
	if want := "slow: scaled to 2, no pod Ready yet after 500ms"; !strings.Contains(progress.String(), want) {
		t.Errorf("the progress does not name the slow workload (%q):\n%s", want, progress.String())
	}
}

// TestAnUnreachableAPIServerFailsSayingWhatToDo: a run that cannot list
// anything fails, never a silent success, and says how to finish.
func TestAnUnreachableAPIServerFailsSayingWhatToDo(t *testing.T) {
	cfg := rest.CopyConfig(config)
	cfg.Host = "https://127.0.0.1:1" // nothing listens there
	cfg.Timeout = 2 * time.Second
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	must(t, err)
	_, err = Run(t.Context(), c, Options{ReadyTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "nothing was restored") || !strings.Contains(err.Error(), "kubectl napwake restore -A") {
		t.Fatalf("Run with no API server = %v, want an error saying nothing was restored and to run kubectl napwake restore -A", err)
	}
}

// scaledObject creates a KEDA ScaledObject scaling Deployment target, with
// annotations.
func (e *env) scaledObject(name, target string, annotations map[string]string) *unstructured.Unstructured {
	so := &unstructured.Unstructured{}
	so.SetGroupVersionKind(ScaledObjectGVK)
	so.SetNamespace(e.ns)
	so.SetName(name)
	so.SetAnnotations(annotations)
	must(e.t, unstructured.SetNestedMap(so.Object, map[string]any{
		"scaleTargetRef": map[string]any{"name": target},
		"triggers":       []any{map[string]any{"type": "cpu", "metricType": "Utilization", "metadata": map[string]any{"value": "50"}}},
	}, "spec"))
	must(e.t, k8s.Create(e.ctx, so))
	return so
}

func (e *env) cronJob(name string, suspend bool, annotations map[string]string) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Annotations: annotations},
		Spec: batchv1.CronJobSpec{
			Schedule: "*/5 * * * *", Suspend: ptr.To(suspend),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "job", Image: "registry.invalid/job:1"}},
			}}}},
		},
	}
	must(e.t, k8s.Create(e.ctx, cj))
	return cj
}

// TestRestoreReleasesOnlyWhatNapwakeHeld: the ScaledObject Napwake held at
// 0 is released (else KEDA keeps the restored workload at 0) and the
// CronJob it suspended resumes; an owner's own paused-replicas and an
// owner's suspended CronJob stay exactly as they were.
func TestRestoreReleasesOnlyWhatNapwakeHeld(t *testing.T) {
	e := newEnv(t)
	e.deployment("api", 0)
	e.managed("api", napwakev1alpha1.KindDeployment, napwakev1alpha1.PhasePaused, 2)
	held := e.scaledObject("api", "api", map[string]string{
		napwakev1alpha1.AnnotationKEDAPausedReplicas: "0", napwakev1alpha1.AnnotationSetPausedReplicas: "true", "team": "a",
	})
	owners := e.scaledObject("worker", "worker", map[string]string{napwakev1alpha1.AnnotationKEDAPausedReplicas: "1"})
	suspended := e.cronJob("report", true, map[string]string{napwakev1alpha1.AnnotationSuspended: "true"})
	ownersJob := e.cronJob("backup", true, nil)

	r, err := Run(e.ctx, k8s, Options{Namespace: e.ns, ReadyTimeout: 100 * time.Millisecond, Poll: 50 * time.Millisecond})
	must(t, err)
	must(t, r.Err())
	if r.ScaledObjects != 1 || r.CronJobs != 1 {
		t.Errorf("released %d ScaledObjects and resumed %d CronJobs, want 1 and 1", r.ScaledObjects, r.CronJobs)
	}
	for _, c := range []struct {
		so   *unstructured.Unstructured
		want map[string]string
	}{
		{held, map[string]string{"team": "a"}},
		{owners, map[string]string{napwakev1alpha1.AnnotationKEDAPausedReplicas: "1"}},
	} {
		must(t, k8s.Get(e.ctx, client.ObjectKeyFromObject(c.so), c.so))
		if got := c.so.GetAnnotations(); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("ScaledObject %s's annotations = %v, want %v", c.so.GetName(), got, c.want)
		}
	}
	must(t, k8s.Get(e.ctx, client.ObjectKeyFromObject(suspended), suspended))
	if *suspended.Spec.Suspend || suspended.Annotations[napwakev1alpha1.AnnotationSuspended] != "" {
		t.Errorf("CronJob report: suspend %v, annotations %v; want resumed and the record gone", *suspended.Spec.Suspend, suspended.Annotations)
	}
	must(t, k8s.Get(e.ctx, client.ObjectKeyFromObject(ownersJob), ownersJob))
	if !*ownersJob.Spec.Suspend {
		t.Error("CronJob backup, suspended by its owner, was resumed")
	}
	if got := e.replicas("api"); got != 2 {
		t.Errorf("api has %d replicas, want its saved 2", got)
	}
}

// TestAnUninstallRestoresAKindWithAScaleSubresource: a paused workload of
// another kind (testenv's ScalableApp) is scaled back through its scale
// subresource to the count its pause saved, and its Ready pods are counted
// from its scale's selector (docs/pause.md#other-kinds-of-workload).
func TestAnUninstallRestoresAKindWithAScaleSubresource(t *testing.T) {
	must(t, testenv.InstallScalableCRDs(config))
	e := newEnv(t)
	gvk := testenv.ScalableAppGVK
	must(t, k8s.Create(e.ctx, testenv.ScalableApp(gvk, e.ns, "web", 0, true)))
	_, err := testenv.FollowScalableApp(e.ctx, k8s, gvk, e.ns, "web")
	must(t, err)
	mw := &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web", Finalizers: []string{napwakev1alpha1.Finalizer}},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{
			APIVersion: gvk.GroupVersion().String(), Kind: napwakev1alpha1.TargetKind(gvk.Kind), Name: "web",
		}},
	}
	must(t, k8s.Create(e.ctx, mw))
	mw.Status.Phase = napwakev1alpha1.PhasePaused
	mw.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: metav1.Now(), Replicas: 2, Reason: napwakev1alpha1.PauseIdle}
	must(t, k8s.Status().Update(e.ctx, mw))

	done := make(chan struct{})
	go func() { // its controller, once scaled back: Ready pods and status
		defer close(done)
		testenv.Eventually(t, "web scaled back", func() error {
			n, err := testenv.FollowScalableApp(e.ctx, k8s, gvk, e.ns, "web")
			if err == nil && n == 0 {
				err = errors.New("still at 0")
			}
			return err
		})
	}()
	r, err := Run(e.ctx, k8s, Options{Namespace: e.ns, ReadyTimeout: 20 * time.Second, Poll: 50 * time.Millisecond})
	<-done
	must(t, err)
	must(t, r.Err())
	o := outcomeOf(r, "web")
	// The restore waits for a Ready pod, not all of them: the stand-in
	// controller above creates its two pods one after the other, and the
	// wait may end between them (a CI run saw 1).
	if o.Target != "ScalableApp.test.napwake.dev/web" || o.From != 0 || o.To != 2 || o.Ready < 1 || o.Ready > 2 {
		t.Fatalf("outcome %+v; want ScalableApp.test.napwake.dev/web 0 → 2, 1 or 2 Ready", o)
	}
	u := testenv.ScalableApp(gvk, e.ns, "web", 0, false)
	must(t, k8s.Get(e.ctx, client.ObjectKeyFromObject(u), u))
	if n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); n != 2 {
		t.Fatalf("spec.replicas %d after the restore, want its saved 2", n)
	}
}
