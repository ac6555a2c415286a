package routing

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Bench shape: 1000 routed Services, as 40 workloads in 40 namespaces with
// 25 single-port Services each (25 ports stays under the 32-per-workload cap).
const (
	benchNamespaces = 40
	benchServices   = 25
)

// BenchmarkRouteMove measures how long the router takes to move 1000 routed
// Services' slices to the remaining doorman pod once the other stops being
// Ready, as seen by a watching client, against a bare client making the
// same 1000 slice updates with the same concurrency, in the same run:
//
//	router-s   doorman pod not Ready -> every slice seen pointing at the other
//	bare-s     a bare client's 1000 updates, the mean of one run before and one after
//	ratio      router-s / bare-s (target <= 1.2), over NAPWAKE_BENCH_ROUNDS rounds
//	worst-ratio  the worst round's
//
// Run it with hack/bench/routing.sh.
func BenchmarkRouteMove(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bcfg := rest.CopyConfig(cfg)
	bcfg.QPS = -1 // as the operator's: controller-runtime's GetConfig leaves client-side limits to API Priority and Fairness
	bare, err := client.NewWithWatch(bcfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	pods := newStandIns(b)
	a, gone := doormanPod{"doorman-a", "10.1.0.1", true}, doormanPod{"doorman-b", "10.1.0.2", true}
	f := &fixture{ctx: ctx, doorman: "bench-doorman", clock: clocktesting.NewFakeClock(time.Now()), pods: pods}
	f.t = b
	f.g = NewWithT(b)
	f.setDoormen(a, gone)
	pods.serve(ctx, a.ip, gone.ip)

	mgr, err := ctrl.NewManager(bcfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		b.Fatal(err)
	}
	r, err := New(mgr.GetClient(), mgr.GetAPIReader(), Options{DoormanService: doormanNS + "/" + f.doorman, Dial: pods.dial}, f.clock, recorder)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		b.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = mgr.Start(mctx) }()
	mgr.GetCache().WaitForCacheSync(mctx)

	for i := range benchNamespaces {
		if err := routeBenchNamespace(ctx, r, fmt.Sprintf("bench-%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	// Creating the Services re-routed their namespaces through the routing
	// controller; a late one would undo the bare client's updates.
	waitIdle(b, "napwake-routing")
	rounds := 1
	if v, err := strconv.Atoi(os.Getenv("NAPWAKE_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	b.ResetTimer()
	var movedSum, bareSum, worstRatio float64
	for range b.N * rounds {
		bare1 := measure(b, ctx, bare, []string{gone.ip}, func(list []discoveryv1.EndpointSlice) { bareUpdate(b, ctx, bare, list, gone.ip, r.opts.Concurrency) })
		gone.ready = false
		moved := measure(b, ctx, bare, []string{a.ip}, func([]discoveryv1.EndpointSlice) { f.setDoormen(a, gone) })
		bare2 := measure(b, ctx, bare, []string{gone.ip}, func(list []discoveryv1.EndpointSlice) { bareUpdate(b, ctx, bare, list, gone.ip, r.opts.Concurrency) })
		gone.ready = true
		f.setDoormen(a, gone) // back to two pods for the next round
		waitFor(b, ctx, bare, []string{a.ip, gone.ip})
		mean := (bare1 + bare2).Seconds() / 2
		b.Logf("round: router %.3fs, bare %.3fs and %.3fs, ratio %.3f", moved.Seconds(), bare1.Seconds(), bare2.Seconds(), moved.Seconds()/mean)
		movedSum += moved.Seconds()
		bareSum += mean
		worstRatio = max(worstRatio, moved.Seconds()/mean)
	}
	n := float64(b.N * rounds)
	b.ReportMetric(movedSum/n, "router-s")
	b.ReportMetric(bareSum/n, "bare-s")
	b.ReportMetric(movedSum/bareSum, "ratio")
	b.ReportMetric(worstRatio, "worst-ratio")
}

// routeBenchNamespace creates a namespace, a Deployment, 25 Services and a
// pausing workload, and routes it.
func routeBenchNamespace(ctx context.Context, r *Router, ns string) error {
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
	tmpl := template(true)
	objs = append(objs, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: apiLabels}, Template: *tmpl}})
	for i := range benchServices {
		objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%d", i), Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: apiLabels, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
	}
	mw := &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"}}}
	objs = append(objs, mw)
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			return err
		}
	}
	base := mw.DeepCopy()
	mw.Status.Phase = napwakev1alpha1.PhasePaused
	mw.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: metav1.Now(), Replicas: 1, Reason: napwakev1alpha1.PauseIdle}
	if err := k8s.Status().Patch(ctx, mw, client.MergeFrom(base)); err != nil {
		return err
	}
	if _, err := r.Route(ctx, mw, tmpl); err != nil {
		return err
	}
	if n := len(routesOf(mw)); n != benchServices {
		return fmt.Errorf("namespace %s: %d routes, want %d", ns, n, benchServices)
	}
	return nil
}

func bareUpdate(b *testing.B, ctx context.Context, c client.Client, list []discoveryv1.EndpointSlice, ip string, n int) {
	b.Helper()
	err := forEach(ctx, n, list, func(ctx context.Context, s discoveryv1.EndpointSlice) error {
		s.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}
		return c.Update(ctx, &s)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// measure lists the routed slices, starts watching them, runs trigger, and
// returns how long until every one is seen pointing at exactly ips.
func measure(b *testing.B, ctx context.Context, c client.WithWatch, ips []string, trigger func([]discoveryv1.EndpointSlice)) time.Duration {
	b.Helper()
	list, w := listWatch(b, ctx, c)
	if len(list) != benchNamespaces*benchServices {
		b.Fatalf("%d routed slices, want %d", len(list), benchNamespaces*benchServices)
	}
	start := time.Now()
	trigger(list)
	waitOn(b, ctx, c, w, ips, list)
	return time.Since(start)
}

func listWatch(b *testing.B, ctx context.Context, c client.WithWatch) ([]discoveryv1.EndpointSlice, watch.Interface) {
	b.Helper()
	var list discoveryv1.EndpointSliceList
	sel := client.MatchingLabels{napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager}
	if err := c.List(ctx, &list, sel); err != nil {
		b.Fatal(err)
	}
	w, err := c.Watch(ctx, &discoveryv1.EndpointSliceList{}, sel, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		b.Fatal(err)
	}
	return list.Items, w
}

func waitFor(b *testing.B, ctx context.Context, c client.WithWatch, ips []string) {
	b.Helper()
	measure(b, ctx, c, ips, func([]discoveryv1.EndpointSlice) {})
}

// waitOn reads the watch until every slice points at ips; a watch the API
// server closes is opened again from a fresh list.
func waitOn(b *testing.B, ctx context.Context, c client.WithWatch, w watch.Interface, ips []string, initial []discoveryv1.EndpointSlice) {
	b.Helper()
	ok := map[string]bool{}
	see := func(s *discoveryv1.EndpointSlice) { ok[s.Namespace+"/"+s.Name] = slices.Equal(endpointIPs(s), ips) }
	for i := range initial {
		see(&initial[i])
	}
	count := func() int {
		n := 0
		for _, v := range ok {
			if v {
				n++
			}
		}
		return n
	}
	defer func() { w.Stop() }()
	deadline := time.After(time.Minute)
	for count() < len(initial) {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				var list []discoveryv1.EndpointSlice
				list, w = listWatch(b, ctx, c)
				for i := range list {
					see(&list[i])
				}
				continue
			}
			if s, isSlice := ev.Object.(*discoveryv1.EndpointSlice); isSlice {
				see(s)
			}
		case <-deadline:
			b.Fatalf("after a minute only %d of %d slices point at %v", count(), len(initial), ips)
		}
	}
}

// waitIdle waits until the controller's work queue has been empty, with no
// reconcile running, for half a second, by its controller-runtime metrics.
func waitIdle(b testing.TB, controller string) {
	b.Helper()
	busy := func() bool {
		mfs, err := metrics.Registry.Gather()
		if err != nil {
			b.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "workqueue_depth" && mf.GetName() != "controller_runtime_active_workers" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if (l.GetName() == "name" || l.GetName() == "controller") && l.GetValue() == controller && m.GetGauge().GetValue() > 0 {
						return true
					}
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(2 * time.Minute)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	quietSince := time.Now()
	for time.Since(quietSince) < 500*time.Millisecond {
		if time.Now().After(deadline) {
			b.Fatalf("controller %s still busy after 2 minutes", controller)
		}
		<-t.C
		if busy() {
			quietSince = time.Now()
		}
	}
}
