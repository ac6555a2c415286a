package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// The edge cases of the counter's bookkeeping, on a fake client (what it
// reads is a list); the controller's envtest covers it against a real API
// server.

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func pausedMW(name string, phase napwakev1alpha1.Phase, replicas int32) *napwakev1alpha1.ManagedWorkload {
	return &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid")},
		Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: phase,
			Pause: &napwakev1alpha1.PauseStatus{StartedAt: metav1.NewTime(t0), Replicas: replicas, Reason: napwakev1alpha1.PauseIdle}},
	}
}

type savedFixture struct {
	t     *testing.T
	c     client.Client
	clock *clocktesting.FakeClock
	m     *Metrics
	last  float64
}

func newSavedFixture(t *testing.T, objs ...client.Object) *savedFixture {
	t.Helper()
	s := runtime.NewScheme()
	if err := napwakev1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	f := &savedFixture{t: t, c: fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(objs...).Build(),
		clock: clocktesting.NewFakeClock(t0), m: New()}
	if err := f.m.Register(prometheus.NewRegistry(), f.c, f.clock); err != nil {
		t.Fatal(err)
	}
	return f
}

// scrape reads the counter, checks it never went down, and that it is want.
func (f *savedFixture) scrape(want float64, when string) {
	f.t.Helper()
	got := testutil.ToFloat64(f.m.PausedReplicaSeconds)
	if got < f.last {
		f.t.Fatalf("%s: the counter went down from %v to %v", when, f.last, got)
	}
	f.last = got
	if got != want {
		f.t.Fatalf("%s: paused replica-seconds %v, want %v", when, got, want)
	}
}

func (f *savedFixture) setPhase(name string, phase napwakev1alpha1.Phase) {
	f.t.Helper()
	var mw napwakev1alpha1.ManagedWorkload
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &mw); err != nil {
		f.t.Fatal(err)
	}
	mw.Status.Phase = phase
	if err := f.c.Status().Update(context.Background(), &mw); err != nil {
		f.t.Fatal(err)
	}
}

func TestSavedGrowsWhilePausedAndItsEndAddsOnlyTheRest(t *testing.T) {
	mw := pausedMW("api", napwakev1alpha1.PhasePaused, 3)
	f := newSavedFixture(t, mw)
	f.scrape(0, "at the pause's start")
	f.clock.Step(time.Hour)
	f.scrape(3*3600, "an hour into the pause")
	f.clock.Step(10 * time.Minute)
	// The wake is recorded while the cache still shows the pause.
	f.m.RecordWake(napwakev1alpha1.SourceRequest, PauseOf(mw), 3, 70*time.Minute)
	f.scrape(3*4200, "the end recorded, the cache behind")
	f.clock.Step(time.Hour)
	f.scrape(3*4200, "an hour later, the cache still behind")
	f.setPhase("api", napwakev1alpha1.PhaseResuming)
	f.scrape(3*4200, "the cache caught up")
}

func TestSavedKeepsWhatAScrapeShowedWhenTheCacheMovesFirst(t *testing.T) {
	mw := pausedMW("api", napwakev1alpha1.PhasePaused, 2)
	f := newSavedFixture(t, mw)
	f.clock.Step(time.Hour)
	f.scrape(2*3600, "an hour into the pause")
	// The cache shows Resuming before the controller records the end,
	// and a scrape falls in between: nothing is lost or added twice.
	f.setPhase("api", napwakev1alpha1.PhaseResuming)
	f.clock.Step(time.Minute)
	f.scrape(2*3600, "resuming in the cache, the end not recorded")
	f.m.RecordWake(napwakev1alpha1.SourceRequest, PauseOf(mw), 2, 61*time.Minute)
	f.scrape(2*3660, "the end recorded")
	f.scrape(2*3660, "once more")
}

func TestSavedKeepsADeletedWorkloadsPause(t *testing.T) {
	mw := pausedMW("api", napwakev1alpha1.PhasePaused, 4)
	other := pausedMW("web", napwakev1alpha1.PhasePausing, 0) // restores at least 1
	f := newSavedFixture(t, mw, other)
	f.clock.Step(30 * time.Minute)
	f.scrape(4*1800+1*1800, "two pauses under way")
	f.m.RecordWake(WokenByDeletion, PauseOf(mw), 4, 0)
	if err := f.c.Delete(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(30 * time.Minute)
	f.scrape(4*1800+1*3600, "one deleted after its last scrape, one still paused")
}

func TestSavedWithoutAReaderCountsEndedPausesOnly(t *testing.T) {
	m := New()
	mw := pausedMW("api", napwakev1alpha1.PhasePaused, 2)
	m.RecordWake(napwakev1alpha1.SourceRequest, PauseOf(mw), 2, time.Hour)
	if got := testutil.ToFloat64(m.PausedReplicaSeconds); got != 7200 {
		t.Fatalf("paused replica-seconds %v, want 7200", got)
	}
}
