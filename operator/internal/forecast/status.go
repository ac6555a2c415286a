package forecast

import (
	"encoding/base64"
	"fmt"
	"time"
)

// EncodeStatus returns the state as status.forecast.state stores it:
// Encode's bytes in standard base64.
func (f *Forecast) EncodeStatus() string { return base64.StdEncoding.EncodeToString(f.Encode()) }

// DecodeStatus reads status.forecast.state, to be counted in loc with s: empty is
// none (nil, nil); anything else is Decode's bytes in standard base64. A
// value that is not base64, or whose bytes Decode refuses (ErrZoneChanged
// among them), is an error, never a panic.
func DecodeStatus(state string, loc *time.Location, s Settings) (*Forecast, error) {
	if state == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(state)
	if err != nil {
		return nil, fmt.Errorf("status.forecast.state is not base64: %w", err)
	}
	f, err := Decode(b, loc, s)
	if err != nil {
		return nil, fmt.Errorf("reading status.forecast.state: %w", err)
	}
	return f, nil
}
