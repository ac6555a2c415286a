package kube

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

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
	if err := k8s.Get(context.Background(), keyOf(ns, "api"), mw); err != nil {
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
	if err := k8s.Get(context.Background(), keyOf(ns, "api"), mw); err != nil {
		t.Fatal(err)
	}
	if got := lastRequest(mw); !got.Equal(stampedAt) || len(recorders[0].Events) > 1 {
		t.Fatalf("a caller after the wake stamped %s (was %s) or emitted again", got, stampedAt)
	}
}
