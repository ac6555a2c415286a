package controller

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
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
// the pause begins.
func startPauseWithRouter(t *testing.T, dial func(context.Context, string, string) (net.Conn, error)) *fixture {
	t.Helper()
	f := newFixture(t, 3)
	f.r = f.reconcilerWith(k8s, f.realRouterWith(k8s, routing.Options{Dial: dial, ListenTimeout: 50 * time.Millisecond}))
	f.runToRunning()
	f.clock.Step(11 * time.Minute)
	res := f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePausing {
		t.Fatalf("phase %q, want Pausing", p)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > decide.RouteRetry {
		t.Fatalf("requeued after %v, want within %v to route again", res.RequeueAfter, decide.RouteRetry)
	}
	return f
}

func (f *fixture) wantReplicas(want int32, why string) {
	f.t.Helper()
	if got := *f.deployment().Spec.Replicas; got != want {
		f.t.Fatalf("target at %d replicas, want %d: %s", got, want, why)
	}
}

// "The slice is in place before the pods stop": a pause whose doorman pod
// is not listening yet on the new port keeps the pods up, routes again
// within RouteRetry, and scales to 0 only once the slice is written.
func TestAPauseKeepsThePodsUpUntilTheDoormanListens(t *testing.T) {
	var listens atomic.Bool
	f := startPauseWithRouter(t, doormanListening(&listens))
	f.wantReplicas(3, "the doorman does not listen yet, so no slice: the pods must not stop")
	if _, slices := f.routed(); len(slices) != 0 {
		f.t.Fatalf("%d slices written before the doorman listens, want none", len(slices))
	}
	f.wantEvent(napwakev1alpha1.EventRoutingFailed, "not listening")

	listens.Store(true)
	f.clock.Step(decide.RouteRetry)
	f.reconcile()
	routes, slices := f.routed()
	if len(routes) != 1 || len(slices) != 1 || !readyEndpointFor("api", slices) {
		t.Fatalf("routes %+v and %d slices once the doorman listens, want 1 and 1 with a Ready endpoint", routes, len(slices))
	}
	f.wantReplicas(0, "routed: the pause goes on")
	f.followSpec()
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePaused {
		t.Fatalf("phase %q, want Paused", p)
	}
}

// "Routing problems never hold up a pause": a doorman that never listens
// holds the pause up for RouteGrace from its start, no longer; the pause
// then goes on without a slice, and says why on WakeOnRequest.
func TestAPauseWhoseRoutingKeepsFailingGoesOnAfterTheGrace(t *testing.T) {
	var never atomic.Bool
	f := startPauseWithRouter(t, doormanListening(&never))
	f.clock.Step(decide.RouteGrace - decide.RouteRetry)
	f.reconcile()
	f.wantReplicas(3, "still within the grace")

	f.clock.Step(decide.RouteRetry)
	f.reconcile()
	f.wantReplicas(0, "the grace is over: routing never holds up a pause longer")
	if _, slices := f.routed(); len(slices) != 0 {
		t.Fatalf("%d slices, want none: the doorman never listened", len(slices))
	}
	c := meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest)
	if c == nil || c.Status != "False" || c.Reason != napwakev1alpha1.ReasonRoutingFailed {
		t.Fatalf("WakeOnRequest %+v, want False, RoutingFailed", c)
	}
}
