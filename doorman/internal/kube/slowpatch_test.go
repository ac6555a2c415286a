package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/shared/testenv"
)

// slowPatches is the API server as the doorman's hooks reach it, slow to
// take a wake stamp: each PATCH of a ManagedWorkload's last-request is
// counted, then held for delay(n) (n counts from 1) or until the request's
// context ends, before it goes on to the real API server. Everything else
// goes through at once.
type slowPatches struct {
	next  http.RoundTripper
	delay func(n int) time.Duration

	mu      sync.Mutex
	patches int
}

func (s *slowPatches) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPatch || !strings.Contains(req.URL.Path, "/managedworkloads/") || req.GetBody == nil {
		return s.next.RoundTrip(req)
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(body)
	_ = body.Close()
	if err != nil {
		return nil, err
	}
	if !strings.Contains(string(b), napwakev1alpha1.AnnotationLastRequest) {
		return s.next.RoundTrip(req)
	}
	s.mu.Lock()
	s.patches++
	n := s.patches
	s.mu.Unlock()
	t := time.NewTimer(s.delay(n)) // the API server's slowness, not a wait for the test
	defer t.Stop()
	select {
	case <-t.C:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return s.next.RoundTrip(req)
}

func (s *slowPatches) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.patches
}

// throughSlowPatches is a client of the test API server whose wake stamps
// go through a slowPatches with delay.
func throughSlowPatches(t *testing.T, delay func(n int) time.Duration) (client.Client, *slowPatches) {
	t.Helper()
	sp := &slowPatches{delay: delay}
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { sp.next = rt; return sp })
	cl, err := client.New(c, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl, sp
}

// stampedRequest is the ManagedWorkload's napwake.dev/last-request, "" when
// none.
func stampedRequest(t *testing.T, namespace string) string {
	t.Helper()
	var mw napwakev1alpha1.ManagedWorkload
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "api"}, &mw); err != nil {
		t.Fatal(err)
	}
	return mw.Annotations[napwakev1alpha1.AnnotationLastRequest]
}

// holdCallers opens n connections to the doorman port, each sending a
// request, held while the workload is paused.
func holdCallers(t *testing.T, port, n int) {
	t.Helper()
	for range n {
		if _, err := dialPort(t, port).Write([]byte("GET /api HTTP/1.1\r\nHost: api\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
	}
}

// An API server that accepts the wake patch's connection and never answers
// does not stall the wake: each patch gives up after 5 s, and the next
// round (2 s later) stamps the pause.
func TestAWakePatchTheAPIServerNeverAnswersIsRetried(t *testing.T) {
	namespace := newNamespace(t)
	port := freeDoormanPort(t)
	createMW(t, namespace, port, napwakev1alpha1.PhasePaused, time.Now().Add(-time.Hour))
	writer, sp := throughSlowPatches(t, func(n int) time.Duration {
		if n == 1 {
			return time.Hour // never, as far as the caller can tell
		}
		return 0
	})
	startDoormanThrough(t, clock.RealClock{}, proxy.DefaultLimits(), writer)
	holdCallers(t, port, 1)
	testenv.EventuallyTrue(t, "the first patch sent", func() bool { return sp.count() == 1 })
	start := time.Now()
	// The patch's 5 s, the 2 s retry, and room for a loaded machine.
	testenv.EventuallyWithin(t, 15*time.Second, testenv.EventuallyInterval, "the wake stamped after a patch the API server never answered", func() error {
		if stampedRequest(t, namespace) == "" {
			return fmt.Errorf("no stamp (%d patches sent)", sp.count())
		}
		return nil
	})
	if d := time.Since(start); d < 5*time.Second {
		t.Fatalf("stamped %v after the unanswered patch, before its 5 s were up", d)
	}
	if n := sp.count(); n != 2 {
		t.Fatalf("%d patches, want the unanswered one and its retry", n)
	}
}

// Callers held at once share one wake patch while it is in flight, however
// slow the API server is to take it: with each patch taking 4 s, longer
// than the 2 s between a caller's rounds, ten callers of a pause whose
// start the doorman does not know yet (its status records none, so only
// the wake in flight says it is being woken) send one patch.
func TestCallersShareAWakePatchInFlightWhileTheAPIServerIsSlow(t *testing.T) {
	namespace := newNamespace(t)
	port := freeDoormanPort(t)
	createMW(t, namespace, port, napwakev1alpha1.PhasePaused, time.Time{})
	writer, sp := throughSlowPatches(t, func(int) time.Duration { return 4 * time.Second })
	st := startDoormanThrough(t, clock.RealClock{}, proxy.DefaultLimits(), writer)
	holdCallers(t, port, 10)
	testenv.EventuallyTrue(t, "every caller held", func() bool { return testutil.ToFloat64(st.m.Held) == 10 })
	testenv.EventuallyTrue(t, "the pause stamped", func() bool { return stampedRequest(t, namespace) != "" })
	if n := sp.count(); n != 1 {
		t.Fatalf("%d wake patches from ten callers while one was in flight, want 1", n)
	}
	if ev := events(t, namespace, napwakev1alpha1.EventWokenByRequest); len(ev) > 1 {
		t.Fatalf("%d WokenByRequest events, want at most 1", len(ev))
	}
}
