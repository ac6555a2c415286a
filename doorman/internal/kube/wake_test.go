package kube

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/proxy"
)

// Two doorman pods, each with ten callers waking one pause at the same
// moment, against a real API server: the pause is stamped once and one
// WokenByRequest is emitted, whoever comes first; a workload already
// Resuming is not stamped at all.
func TestOnePauseIsStampedOnceWhateverThePodsAndCallers(t *testing.T) {
	ns := newNamespace(t)
	pausedAt := time.Now().Add(-time.Minute).Truncate(time.Second)
	createMW(t, ns, freeDoormanPort(t), napwakev1alpha1.PhasePaused, pausedAt)
	w := proxy.Workload{Namespace: ns, Name: "api", Phase: string(napwakev1alpha1.PhasePaused), PausedAt: pausedAt}
	recorders := []*record.FakeRecorder{record.NewFakeRecorder(100), record.NewFakeRecorder(100)}
	pods := []*Hooks{NewHooks(k8s, recorders[0], clock.RealClock{}, logr.Discard()), NewHooks(k8s, recorders[1], clock.RealClock{}, logr.Discard())}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- pods[i%2].Wake(context.Background(), w, "api", netip.MustParseAddr("10.244.0.7"))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a wake failed: %v", err)
		}
	}
	if n := len(recorders[0].Events) + len(recorders[1].Events); n != 1 {
		t.Fatalf("%d WokenByRequest events for one pause from two pods and 20 callers, want 1", n)
	}
	mw := &napwakev1alpha1.ManagedWorkload{}
	if err := k8s.Get(context.Background(), apiKey(ns), mw); err != nil {
		t.Fatal(err)
	}
	stampedAt := lastRequest(mw)
	if stampedAt.Before(pausedAt) {
		t.Fatalf("last-request %q, want a time in the pause", mw.Annotations[napwakev1alpha1.AnnotationLastRequest])
	}

	// The operator takes it: Resuming. A late caller stamps nothing.
	mw.Status.Phase = napwakev1alpha1.PhaseResuming
	if err := k8s.Status().Update(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	if err := pods[0].Wake(context.Background(), w, "api", netip.MustParseAddr("10.244.0.8")); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(context.Background(), apiKey(ns), mw); err != nil {
		t.Fatal(err)
	}
	if got := lastRequest(mw); !got.Equal(stampedAt) || len(recorders[0].Events) > 1 {
		t.Fatalf("a caller after the wake stamped %s (was %s) or emitted again", got, stampedAt)
	}
}

// countingReader is the real client counting its reads.
type countingReader struct {
	client.Client
	gets atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Client.Get(ctx, key, obj, opts...)
}

// copyReader answers every Get with a copy of one ManagedWorkload, as a
// cache that has fallen behind.
type copyReader struct {
	mw *napwakev1alpha1.ManagedWorkload
}

func (c copyReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.mw.DeepCopyInto(obj.(*napwakev1alpha1.ManagedWorkload))
	return nil
}

func (c copyReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// A wake's stamp reads the doorman's informer cache first: when the cache
// is current, the held caller waits for one write and no read; when the
// cache is behind, the API server refuses the guarded patch and the stamp
// reads it instead; a cache saying no stamp is needed is never taken at its
// word, since one behind would leave the caller held for nothing.
func TestAWakeStampReadsTheCacheFirst(t *testing.T) {
	pausedAt := time.Now().Add(-time.Minute).Truncate(time.Second)
	from := netip.MustParseAddr("10.244.0.7")
	wake := func(t *testing.T, ns string, cached client.Reader) (*countingReader, *napwakev1alpha1.ManagedWorkload) {
		t.Helper()
		live := &countingReader{Client: k8s}
		h := NewHooks(live, record.NewFakeRecorder(10), clock.RealClock{}, logr.Discard()).ReadFirstFrom(cached)
		w := proxy.Workload{Namespace: ns, Name: "api", Phase: string(napwakev1alpha1.PhasePaused), PausedAt: pausedAt}
		if err := h.Wake(context.Background(), w, "api", from); err != nil {
			t.Fatal(err)
		}
		mw := &napwakev1alpha1.ManagedWorkload{}
		if err := k8s.Get(context.Background(), apiKey(ns), mw); err != nil {
			t.Fatal(err)
		}
		if lastRequest(mw).Before(pausedAt) || mw.Annotations[napwakev1alpha1.AnnotationLastRequestFrom] != from.String() {
			t.Fatalf("annotations %v: want the wake stamped", mw.Annotations)
		}
		return live, mw
	}
	t.Run("a current cache: no read of the API server", func(t *testing.T) {
		ns := newNamespace(t)
		createMW(t, ns, freeDoormanPort(t), napwakev1alpha1.PhasePaused, pausedAt)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, err := NewCache(cfg, scheme, logr.Discard())
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = c.Start(ctx) }()
		// The cache holds the workload as the API server has it.
		want := &napwakev1alpha1.ManagedWorkload{}
		if err := k8s.Get(ctx, apiKey(ns), want); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for got := (&napwakev1alpha1.ManagedWorkload{}); c.Get(ctx, apiKey(ns), got) != nil || got.ResourceVersion != want.ResourceVersion; {
			if time.Now().After(deadline) {
				t.Fatal("the cache never caught up with the workload")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if live, _ := wake(t, ns, c); live.gets.Load() != 0 {
			t.Errorf("the stamp read the API server %d times with a current cache, want 0", live.gets.Load())
		}
	})
	t.Run("a cache behind: the guarded patch is refused and the API server read", func(t *testing.T) {
		ns := newNamespace(t)
		createMW(t, ns, freeDoormanPort(t), napwakev1alpha1.PhasePaused, pausedAt)
		old := &napwakev1alpha1.ManagedWorkload{}
		if err := k8s.Get(context.Background(), apiKey(ns), old); err != nil {
			t.Fatal(err)
		}
		// Someone writes after the cache's copy: its resourceVersion is old.
		touched := old.DeepCopy()
		touched.Labels = map[string]string{"example.com/touched": "yes"}
		if err := k8s.Update(context.Background(), touched); err != nil {
			t.Fatal(err)
		}
		live, mw := wake(t, ns, copyReader{mw: old})
		if live.gets.Load() != 1 || mw.Labels["example.com/touched"] != "yes" {
			t.Errorf("reads %d, labels %v: want one read of the API server and the other write kept", live.gets.Load(), mw.Labels)
		}
	})
	t.Run("a cache saying it is already awake is not believed", func(t *testing.T) {
		ns := newNamespace(t)
		createMW(t, ns, freeDoormanPort(t), napwakev1alpha1.PhasePaused, pausedAt)
		stale := &napwakev1alpha1.ManagedWorkload{}
		if err := k8s.Get(context.Background(), apiKey(ns), stale); err != nil {
			t.Fatal(err)
		}
		stale.Status.Phase = napwakev1alpha1.PhaseRunning
		if live, _ := wake(t, ns, copyReader{mw: stale}); live.gets.Load() != 1 {
			t.Errorf("reads %d, want the API server read once", live.gets.Load())
		}
	})
}
