package manager

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/shared/testenv"
)

// BenchmarkPause measures, against the real API server, how long the
// operator takes to pause some of its ManagedWorkloads at once (500 of
// 1000, and 1000 of 5000), against a bare client making the same API
// writes with the same concurrency, and the operator's heap per
// ManagedWorkload. Run it once:
//
//	go test ./internal/manager -run XXX -bench Pause -benchtime 1x
//
// Both sides start from the same trigger: pause-requested patched on each
// ManagedWorkload, by a pool of DefaultConcurrency writers. The bare client
// then does what a pause needs, per workload: read the ManagedWorkload,
// merge-patch its status to Pausing with status.pause, read the scale,
// write it to 0, create the Pausing event. The operator's time runs from the first trigger to the
// last of its targets at 0 replicas, seen through a watch.
func BenchmarkPause(b *testing.B) {
	for _, size := range []struct{ paused, total int }{{500, 1000}, {1000, 5000}} {
		b.Run(fmt.Sprintf("%dof%d", size.paused, size.total), func(b *testing.B) {
			for range b.N {
				pauseOf(b, size.paused, size.total)
			}
		})
	}
}

func pauseOf(b *testing.B, paused, total int) {
	b.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("bench-%d", nsCount.Add(1))
	must(b, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	names := make([]string, total)
	for i := range names {
		names[i] = fmt.Sprintf("w%05d", i)
	}
	parallel(names, func(name string) error {
		if err := k8s.Create(ctx, deployment(ns, name, 2, nil, nil)); err != nil {
			return err
		}
		return k8s.Create(ctx, &napwakev1alpha1.ManagedWorkload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: napwakev1alpha1.ManagedWorkloadSpec{
				TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: name},
				IdleAfter: &metav1.Duration{Duration: time.Hour},
			},
		})
	})
	// The bare client goes first, while no operator runs, on the last
	// `paused`; then the operator starts and pauses the first `paused`.
	bareNames := names[total-paused:]
	stamp := time.Now().UTC().Add(30 * time.Second).Format(time.RFC3339)
	bareStart := time.Now()
	parallel(bareNames, func(name string) error { return barePause(ctx, ns, name, stamp) })
	bareTook := time.Since(bareStart)
	b.Logf("bare client: %s", bareTook)

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cfg := testConfig()
	s := start(b, cfg, metrics.New())
	startedAt := time.Now()
	testenv.EventuallyWithin(b, 10*time.Minute, time.Second, "every ManagedWorkload reconciled", func() error {
		var list napwakev1alpha1.ManagedWorkloadList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, mw := range list.Items {
			if mw.Status.Phase == "" {
				return fmt.Errorf("%s not reconciled", mw.Name)
			}
		}
		return nil
	})
	b.Logf("first reconcile of %d took %s", total, time.Since(startedAt).Round(time.Millisecond))
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)

	opNames := names[:paused]
	want := map[string]bool{}
	for _, n := range opNames {
		want[n] = true
	}
	// The end is watched in the operator's own cache: in memory, no load
	// on the API server, behind it by milliseconds at most.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var list napwakev1alpha1.ManagedWorkloadList
			if err := s.mgr.GetCache().List(ctx, &list, client.InNamespace(ns)); err != nil {
				continue
			}
			n := 0
			for _, mw := range list.Items {
				if want[mw.Name] && mw.Status.Phase == napwakev1alpha1.PhasePaused {
					n++
				}
			}
			if n == len(want) {
				return
			}
		}
	}()
	s.clock.SetTime(time.Now().Add(time.Minute)) // after every creationTimestamp
	opStamp := s.clock.Now().Format(time.RFC3339)
	opStart := time.Now()
	parallel(opNames, func(name string) error {
		return patchAnnotation(ctx, ns, name, napwakev1alpha1.AnnotationPauseRequested, opStamp)
	})
	<-done
	opTook := time.Since(opStart)
	var list napwakev1alpha1.ManagedWorkloadList
	must(b, k8s.List(ctx, &list, client.InNamespace(ns)))
	for _, mw := range list.Items {
		if want[mw.Name] && mw.Status.Phase != napwakev1alpha1.PhasePaused {
			b.Fatalf("%s is %q after %s, want Paused", mw.Name, mw.Status.Phase, opTook)
		}
	}

	ratio := opTook.Seconds() / bareTook.Seconds()
	perMW := float64(after.HeapInuse-min(before.HeapInuse, after.HeapInuse)) / float64(total)
	b.ReportMetric(opTook.Seconds(), "operator-s")
	b.ReportMetric(bareTook.Seconds(), "bare-s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(perMW, "heap-B/MW")
	b.Logf("pausing %d of %d at concurrency %d: operator %s, bare client %s, ratio %.2f; heap %.0f B per ManagedWorkload (with its Deployment cached)",
		paused, total, DefaultConcurrency, opTook.Round(time.Millisecond), bareTook.Round(time.Millisecond), ratio, perMW)
}

// barePause makes the requests a whole pause needs, with no operator: the
// trigger; status.pause and phase Pausing; the scale read and set to 0; a
// look for pods left; phase Paused; the two events.
func barePause(ctx context.Context, ns, name, stamp string) error {
	if err := patchAnnotation(ctx, ns, name, napwakev1alpha1.AnnotationPauseRequested, stamp); err != nil {
		return err
	}
	mw := &napwakev1alpha1.ManagedWorkload{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, mw); err != nil {
		return err
	}
	base := mw.DeepCopy()
	mw.Status.Phase = napwakev1alpha1.PhasePausing
	mw.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: metav1.Now(), Replicas: 2, Reason: napwakev1alpha1.PauseRequested}
	if err := k8s.Status().Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	if err := bareEvent(ctx, mw, napwakev1alpha1.EventPausing); err != nil {
		return err
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	scale := &autoscalingv1.Scale{}
	if err := k8s.SubResource("scale").Get(ctx, d, scale); err != nil {
		return err
	}
	scale.Spec.Replicas = 0
	if err := k8s.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale)); err != nil {
		return err
	}
	var pods metav1.PartialObjectMetadataList
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": name}, client.Limit(1)); err != nil {
		return err
	}
	base = mw.DeepCopy()
	mw.Status.Phase = napwakev1alpha1.PhasePaused
	if err := k8s.Status().Patch(ctx, mw, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	return bareEvent(ctx, mw, napwakev1alpha1.EventPaused)
}

// bareEvent creates the event the operator would.
func bareEvent(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, reason string) error {
	return k8s.Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: mw.Namespace, GenerateName: mw.Name + "-"},
		EventTime:           metav1.NowMicro(),
		Regarding:           corev1.ObjectReference{APIVersion: napwakev1alpha1.GroupVersion.String(), Kind: "ManagedWorkload", Namespace: mw.Namespace, Name: mw.Name, UID: mw.UID},
		Reason:              reason,
		Action:              reason,
		Note:                reason + " (Requested): 2 replicas saved",
		Type:                corev1.EventTypeNormal,
		ReportingController: "napwake-bench",
		ReportingInstance:   "napwake-bench-1",
	})
}

func patchAnnotation(ctx context.Context, ns, name, key, value string) error {
	mw := &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value))
	return k8s.Patch(ctx, mw, client.RawPatch(types.MergePatchType, patch))
}

// parallel runs fn for every name on DefaultConcurrency goroutines and
// panics on the first error (benchmarks set up; nothing to recover).
func parallel(names []string, fn func(string) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range DefaultConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(names) {
					return
				}
				if err := fn(names[i]); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		panic(err)
	}
}
