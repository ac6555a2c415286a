package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/deps"
	"napwake.dev/operator/internal/metrics"
)

// env is an environment of several workloads for the dependency tests: one
// reconciler (so one dependency graph), one fake clock, one event
// recorder, and namespaces of Deployments with their ManagedWorkloads. As
// in fixture, the tests play the Deployment controller (follow) and call
// Reconcile themselves, one workload at a time, in the order they choose.
type env struct {
	t      testing.TB
	ctx    context.Context
	ns     string
	clock  *clocktesting.FakeClock
	events *events.FakeRecorder
	r      *ManagedWorkloadReconciler
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), clock: clocktesting.NewFakeClock(start), events: events.NewFakeRecorder(10000)}
	m := metrics.New()
	must(t, m.Register(prometheus.NewRegistry(), k8s, e.clock))
	e.r = &ManagedWorkloadReconciler{
		Client: k8s, APIReader: k8s, Clock: e.clock, Recorder: e.events, Router: &recordingRouter{}, Metrics: m,
		DefaultIdleAfter: 30 * time.Minute, SyncPeriod: time.Minute,
	}
	e.ns = e.namespace(nil)
	return e
}

// namespace makes a namespace with annotations; the graph learns of it as
// the Namespace informer would tell it.
func (e *env) namespace(annotations map[string]string) string {
	e.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("deps-%d", nsCounter.Add(1)), Annotations: annotations}}
	must(e.t, k8s.Create(e.ctx, ns))
	e.r.namespaceChanged(e.ctx, ns)
	return ns.Name
}

// key reads "name" (in e.ns) or "ns/name".
func (e *env) key(s string) deps.Key {
	if ns, name, ok := strings.Cut(s, "/"); ok {
		return deps.Key{Namespace: ns, Name: name}
	}
	return deps.Key{Namespace: e.ns, Name: s}
}

// add creates a Deployment with replicas and its ManagedWorkload (idleAfter
// 10m) depending on deps ("name" or "ns/name"), and reconciles it once. A
// workload made at 0 replicas is paused from the start.
func (e *env) add(name string, replicas int32, deps ...string) {
	e.t.Helper()
	k := e.key(name)
	must(e.t, k8s.Create(e.ctx, deployment(k.Namespace, k.Name, replicas)))
	e.follow(name)
	mw := &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: k.Name},
			IdleAfter: &metav1.Duration{Duration: 10 * time.Minute},
		},
	}
	for _, d := range deps {
		dk := e.key(d)
		ref := napwakev1alpha1.DependencyRef{Name: dk.Name}
		if strings.Contains(d, "/") {
			ref.Namespace = dk.Namespace
		}
		mw.Spec.Dependencies = append(mw.Spec.Dependencies, ref)
	}
	must(e.t, k8s.Create(e.ctx, mw))
	e.reconcile(name)
	if replicas == 0 {
		e.reconcile(name) // Pausing with no pod: Paused
	}
}

// follow plays the Deployment controller: status and pods to match
// spec.replicas, every replica Ready.
func (e *env) follow(name string) {
	e.t.Helper()
	k := e.key(name)
	n := replicasOf(e.deployment(name).Spec.Replicas)
	setDeploymentPods(e.ctx, e.t, types.NamespacedName(k), n, n)
}

func (e *env) deployment(name string) *appsv1.Deployment {
	e.t.Helper()
	d := &appsv1.Deployment{}
	must(e.t, k8s.Get(e.ctx, e.key(name), d))
	return d
}

func (e *env) reconcile(names ...string) {
	e.t.Helper()
	for _, name := range names {
		if _, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: e.key(name)}); err != nil {
			e.t.Fatalf("Reconcile %s: %v", name, err)
		}
	}
}

func (e *env) mw(name string) *napwakev1alpha1.ManagedWorkload {
	e.t.Helper()
	mw := &napwakev1alpha1.ManagedWorkload{}
	must(e.t, k8s.Get(e.ctx, e.key(name), mw))
	return mw
}

func (e *env) annotate(name, k, v string) {
	e.t.Helper()
	mw := e.mw(name)
	patch := client.MergeFrom(mw.DeepCopy())
	if mw.Annotations == nil {
		mw.Annotations = map[string]string{}
	}
	mw.Annotations[k] = v
	must(e.t, k8s.Patch(e.ctx, mw, patch))
}

func (e *env) stamp() string { return e.clock.Now().UTC().Format(time.RFC3339) }

// wantPhase checks each named workload's phase.
func (e *env) wantPhase(phase napwakev1alpha1.Phase, names ...string) {
	e.t.Helper()
	for _, name := range names {
		if got := e.mw(name).Status.Phase; got != phase {
			e.t.Errorf("%s is %q, want %s", name, got, phase)
		}
	}
}
