package onewake

import (
	"testing"
	"time"
)

func TestAStampCountsInThePauseFromItsOwnSecond(t *testing.T) {
	start := time.Date(2026, 12, 7, 3, 7, 22, 700_000_000, time.UTC) // as written, before storing
	p := Of(start)
	cases := []struct {
		name  string
		stamp time.Time
		in    bool
	}{
		{"a second before the pause's second", start.Truncate(time.Second).Add(-time.Nanosecond), false},
		{"in the pause's second, before its fraction", start.Truncate(time.Second).Add(100 * time.Millisecond), true},
		{"after the start", start.Add(time.Second), true},
		{"no stamp", time.Time{}, false},
	}
	for _, tc := range cases {
		if got := p.In(tc.stamp); got != tc.in {
			t.Errorf("%s: In = %v, want %v", tc.name, got, tc.in)
		}
	}
	if (Pause{}).In(start) {
		t.Error("the zero Pause holds a stamp")
	}
}

func TestAStampStandsForWakeStandsAndWakesForWokenFor(t *testing.T) {
	p := Of(time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC))
	stamp := time.Date(2026, 12, 7, 3, 0, 5, 0, time.UTC)
	for _, tc := range []struct {
		after         time.Duration
		stands, woken bool
	}{
		{0, true, true},
		{WakeStands - time.Nanosecond, true, true},
		{WakeStands, false, true},
		{WokenFor - time.Nanosecond, false, true},
		{WokenFor, false, false},
	} {
		now := stamp.Add(tc.after)
		if got := p.Stands(stamp, now); got != tc.stands {
			t.Errorf("%v after: Stands = %v, want %v", tc.after, got, tc.stands)
		}
		if got := p.Woken(stamp, now); got != tc.woken {
			t.Errorf("%v after: Woken = %v, want %v", tc.after, got, tc.woken)
		}
	}
	before := time.Date(2026, 12, 7, 2, 59, 59, 0, time.UTC)
	if p.Stands(before, stamp) || p.Woken(before, stamp) {
		t.Error("a stamp from before the pause stands")
	}
}

func TestAClickIsTooSoonWithinTheIntervalUnlessTheLastIsFarAhead(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		last time.Time
		soon bool
	}{
		{"none", time.Time{}, false},
		{"just now", now.Add(-time.Second), true},
		{"an interval ago", now.Add(-ClickInterval), false},
		{"a little ahead (clocks differ)", now.Add(10 * time.Second), true},
		{"far ahead (a bad clock)", now.Add(MaxClockSkew + time.Second), false},
	} {
		if got := ClickTooSoon(tc.last, now); got != tc.soon {
			t.Errorf("%s: ClickTooSoon = %v, want %v", tc.name, got, tc.soon)
		}
	}
}
