package proxy

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"napwake.dev/shared/onewake"
)

// TestTheWakeMemoForgetsWorkloadsWokenLongAgo: preview environments woken
// once and deleted leave no entry behind (the soak saw one per app it
// replaced); a wake still in flight or within WakeStands is kept, since
// wouldWake reads it.
func TestTheWakeMemoForgetsWorkloadsWokenLongAgo(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	k := &waker{clock: fc, retry: 3 * time.Second, lastWake: map[string]woken{}, limiter: newWakeLimiter(DefaultLimits(), fc)}
	wl := func(i int) Workload { return Workload{Namespace: "preview-" + strconv.Itoa(i), Name: "api"} }
	for i := range 100 {
		k.remember(wl(i), i == 0) // preview-0's patch is still under way
	}
	fc.Step(onewake.WakeStands)
	k.remember(wl(100), false)
	if _, ok := k.lastWake[wl(0).Key()]; !ok {
		t.Fatal("a wake in flight was forgotten")
	}
	if len(k.lastWake) != 2 {
		t.Fatalf("%d entries after onewake.WakeStands, want 2 (the one in flight and the new one)", len(k.lastWake))
	}
	fc.Step(time.Second)
	k.remember(wl(101), false)
	if len(k.lastWake) != 3 {
		t.Fatalf("%d entries a second later, want 3: entries younger than onewake.WakeStands stay, and sweeps come once every onewake.WakeStands", len(k.lastWake))
	}
}

// TestTheTablesEmptyWithNoWakeToSweepThem: the last wakes before a quiet
// night are forgotten by the doorman's housekeeping, not kept until the
// next wake (the 10-minute soak ended with one entry more than it began);
// an entry still in flight stays, and so does a source limiter not yet full.
func TestTheTablesEmptyWithNoWakeToSweepThem(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	l := DefaultLimits()
	k := &waker{clock: fc, retry: 3 * time.Second, lastWake: map[string]woken{}, limiter: newWakeLimiter(l, fc)}
	for i := range 3 {
		w := Workload{Namespace: "preview-" + strconv.Itoa(i), Name: "api"}
		if refund, cap := k.take(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})); refund == nil {
			t.Fatalf("wake %d refused by %s", i, cap)
		}
		k.mu.Lock()
		k.remember(w, i == 0)
		k.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); k.housekeep(ctx) }()
	sizes := func() (memo, sources int) {
		k.mu.Lock()
		defer k.mu.Unlock()
		return len(k.lastWake), len(k.limiter.sources)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !fc.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("housekeep set no ticker")
		}
		time.Sleep(time.Millisecond)
	}
	// Halfway to the tick, one more wake: younger than WakeStands at the
	// tick, it stays. One wake per source spent: full again after
	// SourceEvery (2 s), well before the tick.
	fc.Step(onewake.WakeStands / 2)
	k.mu.Lock()
	k.remember(Workload{Namespace: "preview-3", Name: "api"}, false)
	k.mu.Unlock()
	fc.Step(onewake.WakeStands / 2)
	for memo, sources := sizes(); memo != 2 || sources != 0; memo, sources = sizes() {
		if time.Now().After(deadline) {
			t.Fatalf("after the tick: memo %d entries (want 2: the one in flight and the young one), source limiters %d (want 0: all full again)", memo, sources)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}
