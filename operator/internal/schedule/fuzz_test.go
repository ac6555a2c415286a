package schedule

import (
	"testing"
	"time"
)

var fuzzZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Chatham", "Mars/Olympus", ""}

// FuzzSchedule parses anything as an awake-hours annotation (written by
// anyone who can label a workload) and asks about any instant. What must
// never happen: a panic; a call that does not return; a NextStart that is
// not after the instant asked about (or zero); a NextStart outside a window
// or right after one; an End for an instant outside every window, or none for
// one inside; a Current period that disagrees with Awake and End, does not
// hold the instant, or names no window.
func FuzzSchedule(f *testing.F) {
	f.Add("Mon-Fri 08:00-19:00, Sat 10:00-14:00", uint8(1), int64(1774659600))
	f.Add("Sun 02:00-02:30", uint8(1), int64(1774656000))
	f.Add("Sun 01:30-03:00", uint8(2), int64(1793509200))
	f.Add("Fri-Mon 00:00-24:00", uint8(3), int64(0))
	f.Add("Mon-Fri 25:00-19:00", uint8(0), int64(1))
	f.Add("Sun-Mon", uint8(0), int64(-1))
	f.Add("mon 8:00-24:00,tue 00:00-00:01", uint8(5), int64(4102444800))
	f.Fuzz(func(t *testing.T, value string, zone uint8, unix int64) {
		s, err := ParseList(value, fuzzZones[int(zone)%len(fuzzZones)])
		if err != nil {
			return
		}
		// Instants from 1900 to 2200: the zones' rules are defined there.
		const lo, span = -2208988800, 9467280000
		at := time.Unix(lo+((unix%span)+span)%span, 0)
		awake := s.Awake(at)
		if next := s.NextStart(at); !next.IsZero() {
			if !next.After(at) {
				t.Fatalf("NextStart(%v) = %v, not after it", at, next)
			}
			if !s.Awake(next) || s.Awake(next.Add(-time.Nanosecond)) {
				t.Fatalf("NextStart(%v) = %v is not where a window starts", at, next)
			}
		}
		end := s.End(at)
		if awake != !end.IsZero() || (awake && !end.After(at)) {
			t.Fatalf("at %v awake %v but End %v", at, awake, end)
		}
		p, in := s.Current(at)
		if in != awake || (in && (!p.End.Equal(end) || p.Start.After(at) || len(p.Windows) == 0)) {
			t.Fatalf("at %v awake %v end %v but Current %+v, %v", at, awake, end, p, in)
		}
	})
}
