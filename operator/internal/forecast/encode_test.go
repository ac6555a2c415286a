package forecast

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"
)

// learned is a forecast with every field in use: four weeks of visits, a
// person in the hour being filled, five resume times.
func learned(t *testing.T) *Forecast {
	t.Helper()
	berlin := zone(t, "Europe/Berlin")
	f := New(berlin, local(berlin, 2026, 3, 2, 0, 0))
	visitDaily(f, local(berlin, 2026, 3, 2, 0, 0), 28, 9, 10, 14)
	for _, s := range []int{40, 55, 61, 300} {
		f.RecordResume(time.Duration(s) * time.Second)
	}
	f.RecordPerson(local(berlin, 2026, 3, 30, 11, 12).Add(345 * time.Millisecond))
	return f
}

func TestEncodeDecode(t *testing.T) {
	f := learned(t)
	b := f.Encode()
	if len(b) != EncodedLen || EncodedLen != 216 {
		t.Fatalf("encoded %d bytes, EncodedLen %d; want 216", len(b), EncodedLen)
	}
	g, err := Decode(b, f.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.Encode(), b) {
		t.Error("encoding the decoded state gives other bytes")
	}
	if g.Shares() != f.Shares() || g.Weeks() != f.Weeks() || !g.LastPerson().Equal(f.LastPerson()) || g.ResumeP90() != f.ResumeP90() || g.hit != f.hit || g.hour != f.hour {
		t.Error("the decoded state differs from the encoded one")
	}
	at := local(f.Location(), 2026, 3, 31, 8, 57)
	if a, b := f.PreWake(at), g.PreWake(at); a.Reason != b.Reason || a.Act != b.Act {
		t.Errorf("decisions differ after a round trip: %q vs %q", a.Reason, b.Reason)
	}
}

func TestDecodeRefuses(t *testing.T) {
	f := learned(t)
	good := f.Encode()
	with := func(i int, v byte) []byte {
		b := bytes.Clone(good)
		b[i] = v
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		loc  *time.Location
		want string
	}{
		{"a value of the wrong length (an older version's)", good[:168], f.Location(), "forecast state is 168 bytes, want 216"},
		{"nothing", nil, f.Location(), "forecast state is 0 bytes, want 216"},
		{"another version", with(0, 2), f.Location(), "forecast state version 2, want 1"},
		{"a week learned in another zone", good, zone(t, "America/New_York"), ErrZoneChanged.Error()},
		{"an hour out of range", with(offHour, 0x7f), f.Location(), "forecast state's hour"},
		{"unknown flags", with(offFlags, 0x82), f.Location(), "unknown flags 0x82"},
		{"a resume count past the ring", with(offResumes, 11), f.Location(), "resume ring (11, next 5) is out of range"},
		{"a ring position that does not follow the count", with(offResumes+1, 2), f.Location(), "resume ring (5, next 2) is out of range"},
		{"a resume time past the count", with(offRing+2*7+1, 9), f.Location(), "resume time 7 past its count 5"},
		{"a last person after its hour", with(offPerson, 0x10), f.Location(), "last person"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.b, tc.loc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := Decode(good, zone(t, "UTC")); !errors.Is(err, ErrZoneChanged) {
		t.Errorf("another zone: %v, want ErrZoneChanged", err)
	}
}

// FuzzDecode feeds any bytes as status.forecast (written by anyone who can
// patch status, or by an older version). What must never happen: a panic; a
// decoded state that does not encode back to the same bytes; a decoded
// state whose decisions panic or do not return.
func FuzzDecode(f *testing.F) {
	fc := fuzzSeed(f)
	berlin := fc.Location()
	f.Add(fc.Encode())
	f.Add(New(berlin, time.Unix(0, 0)).Encode())
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, EncodedLen))
	f.Add(bytes.Repeat([]byte{0x01}, EncodedLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := Decode(b, berlin); err != nil && len(b) == EncodedLen {
			// Past the version and the zone too: the fields behind them.
			b = bytes.Clone(b)
			b[0] = version
			binary.BigEndian.PutUint32(b[offZone:], zoneHash(berlin.String()))
		}
		g, err := Decode(b, berlin)
		if err != nil {
			return
		}
		if !bytes.Equal(g.Encode(), b) {
			t.Fatalf("decoded state encodes to other bytes")
		}
		at := g.LastPerson()
		if at.IsZero() {
			at = time.Date(2026, 3, 10, 8, 58, 0, 0, berlin)
		}
		g.PreWake(at)
		g.Hold(at.Add(time.Hour))
		g.PauseEarly(at.Add(2*time.Hour), at, false)
		g.RecordPerson(at.Add(3 * time.Hour))
		g.RecordResume(time.Minute)
		g.Encode()
	})
}

// fuzzSeed is a Berlin forecast of ten days of visits at 09 and 17, the
// fuzzers' first seed.
func fuzzSeed(f *testing.F) *Forecast {
	f.Helper()
	berlin := zone(f, "Europe/Berlin")
	fc := New(berlin, time.Date(2026, 3, 2, 0, 0, 0, 0, berlin))
	visitDaily(fc, time.Date(2026, 3, 2, 0, 0, 0, 0, berlin), 10, 9, 17)
	return fc
}
