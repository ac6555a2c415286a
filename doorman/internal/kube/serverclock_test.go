package kube

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/proxy"
)

// skewedClock is a node clock off by d, ticking.
type skewedClock struct{ d time.Duration }

func (c skewedClock) Now() time.Time                  { return time.Now().Add(c.d) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

var _ clock.PassiveClock = skewedClock{}

// A doorman whose node clock is 5 s slow stamps a wake with the API
// server's time, read from the Date of its answers: the stamp is not
// before the pause that began a second ago (the operator would not act on
// it), and at most a second after the server's time.
func TestAWakeIsStampedWithTheAPIServersTimeOnASlowNode(t *testing.T) {
	ns := newNamespace(t)
	pausedAt := time.Now().Add(-time.Second) // envtest's clock is this machine's
	createMW(t, ns, freeDoormanPort(t), napwakev1alpha1.PhasePaused, pausedAt)

	sc := NewServerClock(skewedClock{-5 * time.Second})
	wrapped := rest.CopyConfig(cfg)
	wrapped.Wrap(sc.Wrap)
	c, err := client.New(wrapped, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	hooks := NewHooks(c, record.NewFakeRecorder(10), sc, logr.Discard())
	w := proxy.Workload{Namespace: ns, Name: "api", Phase: string(napwakev1alpha1.PhasePaused), PausedAt: pausedAt}
	if err := hooks.Wake(context.Background(), w, "api", netip.MustParseAddr("10.0.0.9")); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	var mw napwakev1alpha1.ManagedWorkload
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "api"}, &mw); err != nil {
		t.Fatal(err)
	}
	stamp, err := time.Parse(time.RFC3339Nano, mw.Annotations[napwakev1alpha1.AnnotationLastRequest])
	if err != nil {
		t.Fatalf("last-request %q: %v", mw.Annotations[napwakev1alpha1.AnnotationLastRequest], err)
	}
	if stamp.Before(pausedAt) || stamp.After(after.Add(time.Second)) {
		t.Fatalf("last-request %s on a node 5 s slow; want the API server's time, between the pause's start %s and a second after %s",
			stamp.Format(time.RFC3339Nano), pausedAt.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
	}
}

// Before any answer carried a Date the server clock is the local one.
func TestTheServerClockIsTheLocalOneUntilADate(t *testing.T) {
	local := skewedClock{-5 * time.Second}
	sc := NewServerClock(local)
	if d := local.Now().Sub(sc.Now()); d < -100*time.Millisecond || d > 100*time.Millisecond {
		t.Fatalf("server clock %v from the local one before any Date; want the local one", d)
	}
}
