package controller

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing"
)

// doormanListening is a Dial for the real Router: the doorman pod refuses
// connections until listens is set, as one whose informers have not yet
// seen the new route (just after an API outage, say).
func doormanListening(listens *atomic.Bool) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !listens.Load() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		return listening(ctx, network, addr)
	}
}

// startPauseWithRouter makes the fixture's workload Running with the real
// Router dialling through dial, then lets it go idle and reconciles once:
// the pause begins, and the Route it asks for is made.
func startPauseWithRouter(t *testing.T, dial func(context.Context, string, string) (net.Conn, error)) (*fixture, reconcile.Result) {
	t.Helper()
	f := newFixture(t, 3)
	f.r = f.reconcilerWith(k8s, f.realRouterWith(k8s, routing.Options{Dial: dial, ListenTimeout: 50 * time.Millisecond}))
	f.runToRunning()
	f.clock.Step(11 * time.Minute)
	res := f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePausing {
		t.Fatalf("phase %q, want Pausing", p)
	}
	return f, res
}

func (f *fixture) wantReplicas(want int32, why string) {
	f.t.Helper()
	if got := *f.deployment().Spec.Replicas; got != want {
		f.t.Fatalf("target at %d replicas, want %d: %s", got, want, why)
	}
}

// "Routing problems never hold up a pause": a pause whose doorman pod does
// not listen on the new port scales to 0 in the reconcile whose Route
// failed, says why on WakeOnRequest, and is routed by the retry the
// Router's backoff asks for once the doorman listens.
func TestAPauseWhoseRoutingFailsGoesOnAtOnce(t *testing.T) {
	var listens atomic.Bool
	f, res := startPauseWithRouter(t, doormanListening(&listens))
	f.wantReplicas(0, "a routing failure never holds up a pause")
	if _, slices := f.routed(); len(slices) != 0 {
		t.Fatalf("%d slices written while the doorman does not listen, want none", len(slices))
	}
	c := meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest)
	if c == nil || c.Status != "False" || c.Reason != napwakev1alpha1.ReasonRoutingFailed {
		t.Fatalf("WakeOnRequest %+v, want False, RoutingFailed", c)
	}
	f.wantEvent(napwakev1alpha1.EventRoutingFailed, "not listening")
	if res.RequeueAfter <= 0 || res.RequeueAfter > 5*time.Second {
		t.Fatalf("requeued after %v, want the Router's first backoff, 5s, to route again", res.RequeueAfter)
	}

	listens.Store(true)
	f.followSpec()
	f.clock.Step(res.RequeueAfter)
	f.reconcile()
	routes, slices := f.routed()
	if len(routes) != 1 || len(slices) != 1 || !readyEndpointFor("api", slices) {
		t.Fatalf("routes %+v and %d slices once the doorman listens, want 1 and 1 with a Ready endpoint", routes, len(slices))
	}
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePaused {
		t.Fatalf("phase %q, want Paused", p)
	}
}
