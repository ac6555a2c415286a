package framework

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"

	"napwake.dev/shared/negcheck"
)

// ForwardedSliceWatch checks every version of every forwarded EndpointSlice
// (napwake.dev/forwarded=true) of a namespace that the API server shows,
// from WatchForwardedSlices until Stop, against GKE's NEG controller's
// rules (shared/negcheck). It records; the scenario asserts.
//
// A rule that holds of the slice alone (a nodeName, a targetRef to a Pod
// of the namespace, the port names) must hold for every version. A rule
// about the objects the slice names (the Pod exists, is Ready, has that
// address; its node and podCIDRs) can break for a moment when they change
// before the operator rewrites the slice, as when a forwarder pod begins
// to terminate: such a problem fails only once it has lasted settle.
type ForwardedSliceWatch struct {
	f      *Framework
	ns     string
	settle time.Duration
	store  toolscache.Store
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	versions map[string]bool // namespace/name@resourceVersion checked
	failures map[string]bool
	pending  map[string]time.Time // problem key -> first seen
}

// ForwardedSliceReport is what a ForwardedSliceWatch saw.
type ForwardedSliceReport struct {
	// Versions is how many slice versions it checked.
	Versions int
	// Failures are the problems that broke a rule for good, sorted.
	Failures []string
}

// WatchForwardedSlices starts checking ns's forwarded slices; see
// ForwardedSliceWatch.
func (f *Framework) WatchForwardedSlices(ctx context.Context, ns string, settle time.Duration) (*ForwardedSliceWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(f.Clientset, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = negcheck.LabelForwarded + "=true" }))
	inf := factory.Discovery().V1().EndpointSlices().Informer()
	w := &ForwardedSliceWatch{f: f, ns: ns, settle: settle, store: inf.GetStore(), cancel: cancel, done: make(chan struct{}),
		versions: map[string]bool{}, failures: map[string]bool{}, pending: map[string]time.Time{}}
	seen := func(obj any) {
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
			w.check(ctx, []discoveryv1.EndpointSlice{*s}, false)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("watching the forwarded EndpointSlices of %s: %w", ns, err)
	}
	factory.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("listing the forwarded EndpointSlices of %s: %w", ns, ctx.Err())
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				factory.Shutdown()
				return
			case <-t.C:
				w.checkCurrent(ctx)
			}
		}
	}()
	return w, nil
}

// checkCurrent checks the slices as they are now, which settles the
// problems that have gone and fails those that have lasted.
func (w *ForwardedSliceWatch) checkCurrent(ctx context.Context) {
	var cur []discoveryv1.EndpointSlice
	for _, o := range w.store.List() {
		if s, ok := o.(*discoveryv1.EndpointSlice); ok {
			cur = append(cur, *s)
		}
	}
	w.check(ctx, cur, true)
}

// check checks slices against the namespace's objects as they are now.
// With current, slices are every forwarded slice there is: a pending
// problem they no longer show has settled.
func (w *ForwardedSliceWatch) check(ctx context.Context, slices []discoveryv1.EndpointSlice, current bool) {
	objs, err := negcheck.Read(ctx, w.f.Client, w.ns)
	if err != nil {
		return // the next look reads again
	}
	problems := negcheck.Check(slices, objs)
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range slices {
		w.versions[s.Namespace+"/"+s.Name+"@"+s.ResourceVersion] = true
	}
	still := map[string]bool{}
	for _, p := range problems {
		if !p.Rule.Settles() {
			w.failures[p.String()] = true
			continue
		}
		key := p.Slice + "|" + p.Endpoint + "|" + string(p.Rule)
		still[key] = true
		first, ok := w.pending[key]
		if !ok {
			w.pending[key] = now
			continue
		}
		if now.Sub(first) >= w.settle {
			w.failures[fmt.Sprintf("%s (for %s)", p, now.Sub(first).Round(time.Second))] = true
		}
	}
	if current {
		for key := range w.pending {
			if !still[key] {
				delete(w.pending, key)
			}
		}
	}
}

// Versions is how many slice versions have been checked so far.
func (w *ForwardedSliceWatch) Versions() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.versions)
}

// Stop ends the watch and reports.
func (w *ForwardedSliceWatch) Stop() ForwardedSliceReport {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	r := ForwardedSliceReport{Versions: len(w.versions)}
	for f := range w.failures {
		r.Failures = append(r.Failures, f)
	}
	sort.Strings(r.Failures)
	return r
}
