package manager

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"napwake.dev/operator/internal/metrics"
)

// An operator starting while the API server is away waits for it in the
// process (no exit, so no CrashLoopBackOff), and goes on once it answers
// and serves ManagedWorkloads: a kube-apiserver just started answers
// /version a moment before its custom resources (the operator exited on
// that moment in an e2e run, and lost 10 s to CrashLoopBackOff).
func TestAStartWithoutTheAPIServerWaitsForItsReturn(t *testing.T) {
	var up, crds atomic.Bool
	var asked, askedGroup atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		switch {
		case up.Load() && r.URL.Path == "/version":
			_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
		case up.Load() && r.URL.Path == "/apis/napwake.dev/v1alpha1":
			askedGroup.Add(1)
			if !crds.Load() {
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
				return
			}
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"napwake.dev/v1alpha1","resources":[{"name":"managedworkloads","namespaced":true,"kind":"ManagedWorkload","verbs":["get","list","watch"]}]}`))
		default:
			http.Error(w, "away", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	done := make(chan error, 1)
	go func() { done <- WaitForAPIServer(context.Background(), &rest.Config{Host: srv.URL}, logr.Discard()) }()
	stillWaitingAfter := func(n *atomic.Int32, what string) { // polling with a bound
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); n.Load() < 2; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not asked again %s", what)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("returned %s: %v", what, err)
		default:
		}
	}
	stillWaitingAfter(&asked, "while the API server was away")
	up.Store(true)
	stillWaitingAfter(&askedGroup, "while the API server answered /version but served no ManagedWorkloads")
	crds.Store(true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting 5 s after the API server served ManagedWorkloads")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	up.Store(false)
	if err := WaitForAPIServer(ctx, &rest.Config{Host: srv.URL}, logr.Discard()); err == nil {
		t.Fatal("returned nil for an ended context while the API server was away")
	}
}

// A container restarted in the same pod (its name the identity) takes the
// lease it held back at once; another identity would wait out its 15 s.
func TestARestartedOperatorTakesItsLeaseBackAtOnce(t *testing.T) {
	cfg := testConfig()
	cfg.LeaderElect = true
	ctx := context.Background()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.LeaderElectionNamespace, Name: LeaderElectionID}}
	_ = k8s.Delete(ctx, lease)
	now := metav1.NewMicroTime(time.Now())
	lease.Spec = coordinationv1.LeaseSpec{ // as the container that just died left it
		HolderIdentity: ptr.To("napwake-operator-7d4f-abcde"), LeaseDurationSeconds: ptr.To[int32](15),
		AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](0),
	}
	if err := k8s.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, lease, client.PropagationPolicy(metav1.DeletePropagationBackground)) })
	start := time.Now()
	restarted := startAs(t, cfg, metrics.New(), "napwake-operator-7d4f-abcde")
	select {
	case <-restarted.mgr.Elected():
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("elected after %v, want at once (a retry period or two)", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the restarted container was not elected within 10 s of its start")
	}
}
