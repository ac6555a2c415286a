package proxy

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

func TestAWatchIsToldOnceOnTheNextChangeOfItsKey(t *testing.T) {
	tb := NewTable()
	k := ServiceKey{"ns", "api", "http"}
	other := ServiceKey{"ns", "web", "http"}
	eps, changed := tb.watch(k)
	if len(eps) != 0 {
		t.Fatalf("endpoints %v before any", eps)
	}
	_, cancelled := tb.watch(k)
	stopped := false
	stop := context.AfterFunc(cancelled, func() { stopped = true })
	if !stop() {
		t.Fatal("a wait stopped before any change was already told")
	}
	tb.SetEndpoints(other, []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:80")})
	if changed.Err() != nil {
		t.Fatal("a change of another key told the watch")
	}
	ap := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.2:80")}
	tb.SetEndpoints(k, ap)
	if changed.Err() == nil {
		t.Fatal("a change of its key did not tell the watch")
	}
	if got, next := tb.watch(k); len(got) != 1 || got[0] != ap[0] || next.Err() != nil {
		t.Fatalf("a watch after the change: endpoints %v, told %v; want the new endpoints, not told yet", got, next.Err())
	}
	tb.SetEndpoints(k, nil)
	if stopped {
		t.Fatal("a stopped wait was told")
	}
	if got := tb.Endpoints(k); len(got) != 0 {
		t.Fatalf("endpoints %v after clearing", got)
	}
}

func TestAKeyIsForgottenOnceNoEndpointsAndNoWaitersRemain(t *testing.T) {
	tb := NewTable()
	k := ServiceKey{"ns", "api", "http"}
	tb.hold(k, 1)
	tb.SetEndpoints(k, nil)
	if got := tb.Waiting(k); got != 1 {
		t.Fatalf("waiting %d, want the one held connection", got)
	}
	tb.hold(k, -1)
	if got := tb.Waiting(k); got != 0 || len(tb.keys) != 0 {
		t.Fatalf("waiting %d, %d keys kept; want none", got, len(tb.keys))
	}
}

func TestPausedUntil(t *testing.T) {
	now := time.Date(2026, 10, 23, 18, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Hour), now.Add(-time.Hour)
	for _, tc := range []struct {
		name string
		w    Workload
		want time.Time
	}{
		{"no pause-until holds nothing", Workload{}, time.Time{}},
		{"a pause-until ahead holds it until then", Workload{PauseUntil: later}, later},
		{"a pause-until run out holds nothing", Workload{PauseUntil: earlier}, time.Time{}},
		{"a pause-until exactly now has run out", Workload{PauseUntil: now}, time.Time{}},
		{"a keep-awake-until in force outweighs it", Workload{PauseUntil: later, KeepAwakeUntil: now.Add(time.Minute)}, time.Time{}},
		{"a keep-awake-until run out does not", Workload{PauseUntil: later, KeepAwakeUntil: earlier}, later},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.PausedUntil(now); !got.Equal(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
