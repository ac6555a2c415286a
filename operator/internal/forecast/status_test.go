package forecast

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestDecodeStatus(t *testing.T) {
	f := learned(t)
	g, err := DecodeStatus(f.EncodeStatus(), f.Location(), f.set)
	if err != nil || g.EncodeStatus() != f.EncodeStatus() {
		t.Fatalf("a round trip: %v", err)
	}
	v1 := base64.StdEncoding.EncodeToString(append([]byte{1}, make([]byte, 215)...))
	for _, tc := range []struct {
		name, state string
		loc         *time.Location
		want        string
	}{
		{"an older operator's hourly shares", v1, f.Location(),
			"reading status.forecast.state: forecast state is from an older version: no history yet"},
		{"another length", base64.StdEncoding.EncodeToString(make([]byte, 168)), f.Location(),
			"reading status.forecast.state: forecast state is 168 bytes, want 658"},
		{"not base64", "!!", f.Location(), "status.forecast.state is not base64: illegal base64 data at input byte 0"},
		{"another zone", f.EncodeStatus(), time.UTC, "reading status.forecast.state: decoding forecast state for UTC: forecast was learned in another time zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if g, err := DecodeStatus(tc.state, tc.loc, f.set); g != nil || err == nil || err.Error() != tc.want {
				t.Errorf("DecodeStatus: %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := DecodeStatus(v1, f.Location(), f.set); !errors.Is(err, ErrOldVersion) {
		t.Errorf("an older version: %v, want ErrOldVersion", err)
	}
	if _, err := DecodeStatus(f.EncodeStatus(), time.UTC, f.set); !errors.Is(err, ErrZoneChanged) {
		t.Errorf("another zone: %v, want ErrZoneChanged", err)
	}
	if g, err := DecodeStatus("", time.UTC, f.set); g != nil || err != nil {
		t.Errorf("empty: %v %v, want none", g, err)
	}
}

// FuzzDecodeStatus feeds any text as status.forecast.state and
// status.forecast.lastWeek (anyone who may patch status, or an older
// version, wrote it), read both by the operator (DecodeStatus) and by the
// plugin (napwakev1alpha1's readers). What must never happen: a panic; a
// state the operator accepts that the plugin refuses or reads other hours
// from; a decoded state whose decisions panic.
func FuzzDecodeStatus(f *testing.F) {
	fc := learned(f)
	berlin := fc.Location()
	f.Add(fc.EncodeStatus(), napwakev1alpha1.EncodeLastWeek(napwakev1alpha1.LastWeek{}))
	f.Add(base64.StdEncoding.EncodeToString(append([]byte{1}, make([]byte, 215)...)), "")
	f.Add("", "AAAA")
	f.Add("\r\n"+fc.EncodeStatus(), "====")
	f.Fuzz(func(t *testing.T, state, lastWeek string) {
		_, _ = napwakev1alpha1.DecodeLastWeek(lastWeek)
		w, werr := napwakev1alpha1.ReadForecastState(state)
		g, err := DecodeStatus(state, berlin, fc.set)
		if err != nil || g == nil {
			return
		}
		if werr != nil || !w.LastPerson.Equal(g.LastPerson()) || w.Hours != g.Hours() {
			t.Fatalf("the operator reads a state the plugin reads otherwise (%v)", werr)
		}
		decide(g)
	})
}
