package forecast

import (
	"encoding/base64"
	"testing"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// The plugin reads status.forecast.state with napwakev1alpha1's reader of
// the version-1 layout: it must read what Encode writes.
func TestTheAPIsReaderReadsWhatEncodeWrites(t *testing.T) {
	f := learned(t)
	w, err := napwakev1alpha1.ReadForecastState(base64.StdEncoding.EncodeToString(f.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	if EncodedLen != napwakev1alpha1.ForecastStateLen || Slots != napwakev1alpha1.ForecastSlots {
		t.Fatalf("lengths differ: %d/%d, %d/%d", EncodedLen, napwakev1alpha1.ForecastStateLen, Slots, napwakev1alpha1.ForecastSlots)
	}
	if w.Shares != f.Shares() || float64(w.Hours) != f.Weeks()*Slots || !w.LastPerson.Equal(f.LastPerson()) {
		t.Errorf("the reader read %d hours, last person %v; want %v, %v and the same shares", w.Hours, w.LastPerson, f.Weeks()*Slots, f.LastPerson())
	}
}
