package forecast

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// learned is a forecast with every field in use: three weeks of office
// days in Berlin, a person in the hour being filled, five resume times.
func learned(t testing.TB) *Forecast {
	t.Helper()
	f := officeWeeks(Settings{IdleAfter: idle, PauseEarly: true}, 22)
	for _, s := range []int{40, 55, 61, 300} {
		f.RecordResume(time.Duration(s) * time.Second)
	}
	f.RecordPerson(local(berlin, 3, 3, 11, 12).Add(345 * time.Millisecond))
	return f
}

func TestEncodeDecode(t *testing.T) {
	f := learned(t)
	b := f.Encode()
	if len(b) != EncodedLen || EncodedLen != 658 || base64.StdEncoding.EncodedLen(EncodedLen) >= 1024 {
		t.Fatalf("encoded %d bytes, EncodedLen %d; want 658, under 1 KiB in base64", len(b), EncodedLen)
	}
	g, err := Decode(b, f.Location(), f.set)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.Encode(), b) {
		t.Error("encoding the decoded state gives other bytes")
	}
	at := local(f.Location(), 3, 3, 14, 30)
	f.RecordPerson(local(f.Location(), 3, 3, 14, 0))
	g.RecordPerson(local(f.Location(), 3, 3, 14, 0))
	if a, b := f.Hold(at), g.Hold(at); a != b || !a.Act {
		t.Errorf("the decoded forecast holds %+v, the encoded one %+v", b, a)
	}
	if g.ResumeP90() != f.ResumeP90() || !g.LastPerson().Equal(f.LastPerson()) {
		t.Error("the decoded state differs from the encoded one")
	}
}

// The plugin reads status.forecast.state with napwakev1alpha1's reader: it
// must read what Encode writes, at the offsets it names.
func TestTheAPIsReaderReadsWhatEncodeWrites(t *testing.T) {
	f := learned(t)
	w, err := napwakev1alpha1.ReadForecastState(f.EncodeStatus())
	if err != nil {
		t.Fatal(err)
	}
	if EncodedLen != napwakev1alpha1.ForecastStateLen || Slots != napwakev1alpha1.ForecastSlots || version != napwakev1alpha1.ForecastStateVersion {
		t.Fatalf("layouts differ: %d/%d bytes, %d/%d slots", EncodedLen, napwakev1alpha1.ForecastStateLen, Slots, napwakev1alpha1.ForecastSlots)
	}
	holds := f.SlotHolds()
	for i := range holds {
		if d := w.Shares[i] - holds[i]; d > 0.5/holdScale || d < -0.5/holdScale {
			t.Fatalf("slot %d: the reader read %.3f, the forecast has %.3f", i, w.Shares[i], holds[i])
		}
	}
	if w.Hours != f.Hours() || !w.LastPerson.Equal(f.LastPerson()) {
		t.Errorf("the reader read %d hours, last person %v; want %d, %v", w.Hours, w.LastPerson, f.Hours(), f.LastPerson())
	}
	// Tuesday 14:00, the meeting, is held; Tuesday 18:00 is not.
	if holds[24+14] == 0 || holds[24+18] != 0 {
		t.Errorf("Tue 14:00 holds %.2f, Tue 18:00 %.2f; want a hold at 14:00 only", holds[24+14], holds[24+18])
	}
}

func TestDecodeRefuses(t *testing.T) {
	f := learned(t)
	good := f.Encode()
	set := func(off int, v ...byte) []byte {
		b := bytes.Clone(good)
		copy(b[off:], v)
		return b
	}
	berlin := f.Location()
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"an older operator's version-1 state", append([]byte{1}, make([]byte, 215)...), ErrOldVersion.Error()},
		{"another length", good[:100], "forecast state is 100 bytes, want 658"},
		{"another version", set(0, 3), "forecast state version 3, want 2"},
		{"unknown flags", set(offFlags, 0x82), "forecast state has unknown flags 0x82"},
		{"a resume ring out of range", set(offResumes, 11), "forecast state's resume ring (11, next 5) is out of range"},
		{"an arrival past the day's end", set(offArrivals, 0x05, 0xa0), "forecast state's first arrival 1440 is out of range"},
		{"a gap ring out of range", set(offGapCount, 129), "forecast state's gap ring (129, next 48) is out of range"},
		{"a gap longer than 4 hours", set(offGaps+2, 241), "forecast state's gap 0 ("},
		{"a gap on the wrong weekday", set(offGaps, 0xff, 0x00), "forecast state's gap 0 begins at minute 10200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.b, berlin, f.set)
			if err == nil || !bytes.HasPrefix([]byte(err.Error()), []byte(tc.want)) {
				t.Errorf("Decode: %v, want %q…", err, tc.want)
			}
		})
	}
	if _, err := Decode(good, time.UTC, f.set); !errors.Is(err, ErrZoneChanged) {
		t.Errorf("another zone: %v, want ErrZoneChanged", err)
	}
}

// FuzzDecode feeds any bytes as a state. What must never happen: a panic;
// a state accepted that encodes to other bytes (but for the derived
// hours the plugin draws); a decoded state whose decisions panic.
func FuzzDecode(f *testing.F) {
	fc := learned(f)
	berlin := fc.Location()
	f.Add(fc.Encode())
	f.Add(New(berlin, time.Unix(0, 0), fc.set).Encode())
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, EncodedLen))
	f.Add(bytes.Repeat([]byte{0x02}, EncodedLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := Decode(b, berlin, fc.set); err != nil && len(b) == EncodedLen {
			// Past the version and the zone too: the fields behind them.
			b = bytes.Clone(b)
			b[0] = version
			binary.BigEndian.PutUint32(b[offZone:], zoneHash(berlin.String()))
		}
		g, err := Decode(b, berlin, fc.set)
		if err != nil {
			return
		}
		e := g.Encode()
		if !bytes.Equal(e[:offHolds], b[:offHolds]) || !bytes.Equal(e[offArrivals:], b[offArrivals:]) {
			t.Fatalf("decoded state encodes to other bytes")
		}
		decide(g)
	})
}

// decide asks every decision around the state's last person.
func decide(g *Forecast) {
	at := g.LastPerson()
	if at.IsZero() {
		at = time.Date(2026, 3, 10, 8, 58, 0, 0, g.Location())
	}
	for _, d := range []time.Duration{time.Minute, 20 * time.Minute, time.Hour, 5 * time.Hour} {
		g.PreWake(at.Add(d))
		g.Hold(at.Add(d))
		g.PauseEarly(at.Add(d), at, false)
	}
	g.RecordPerson(at.Add(6 * time.Hour))
}
