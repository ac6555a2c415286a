package proxy

import (
	"net/netip"
	"testing"
)

func TestSubscribeFiresOnceOnTheNextChangeOfItsKey(t *testing.T) {
	tb := NewTable()
	k := ServiceKey{"ns", "api", "http"}
	other := ServiceKey{"ns", "web", "http"}
	fired, cancelledFired := 0, 0
	eps, _ := tb.Subscribe(k, func() { fired++ })
	if len(eps) != 0 {
		t.Fatalf("endpoints %v before any", eps)
	}
	_, cancel := tb.Subscribe(k, func() { cancelledFired++ })
	cancel()
	tb.SetEndpoints(other, []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:80")})
	if fired != 0 {
		t.Fatal("a change of another key fired")
	}
	ap := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.2:80")}
	tb.SetEndpoints(k, ap)
	tb.SetEndpoints(k, nil)
	if fired != 1 || cancelledFired != 0 {
		t.Fatalf("fired %d (want 1), cancelled fired %d (want 0)", fired, cancelledFired)
	}
	if got := tb.Endpoints(k); len(got) != 0 {
		t.Fatalf("endpoints %v after clearing", got)
	}
}
