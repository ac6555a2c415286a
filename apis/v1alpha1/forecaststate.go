package v1alpha1

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// The forecast's stored state (status.forecast.state), version 2, as the
// operator's forecast package writes it, big-endian: byte 0 the version,
// 1..4 a hash of the zone, 5..12 the hour being filled, 13..16 the hours of
// history, 17 flags, 18..25 the latest person (Unix seconds), 26..47 the
// resume times, 48..215 for each of the 168 hours of the local week
// (Monday 00:00 first) the chance in 255ths that someone returns within the
// hold the forecast would choose for an idle stretch begun then (0: no
// hold), then the first arrivals and the idle gaps the plugin does not
// read. The operator's tests pin these offsets against its encoder.
const (
	// ForecastStateLen is the decoded length of a version-2 state.
	ForecastStateLen     = 658
	ForecastStateVersion = 2
	// ForecastSlots is the number of hourly slots of the local week.
	ForecastSlots      = 168
	forecastOffFolds   = 13
	forecastOffPerson  = 18
	forecastOffShares  = 48
	forecastShareScale = 255
	forecastWeekBytes  = ForecastSlots / 8
)

// ForecastWeek is what the plugin draws of a stored state.
// +kubebuilder:object:generate=false
type ForecastWeek struct {
	// Shares are the 168 hours' chances someone returns within the hold
	// the forecast would choose, 0 to 1 (0: no hold), Monday 00:00 first.
	Shares [ForecastSlots]float64
	// Hours is how many hours of history the forecast has.
	Hours int64
	// LastPerson is the latest person-caused activity (zero: none).
	LastPerson time.Time
}

// ReadForecastState reads the parts of a base64 state the plugin draws. A
// value that is not base64 of ForecastStateLen bytes of version 2 (an
// older operator's version 1 among them) is an error, never a panic. It does not check what only the operator can (the
// zone, the ranges); the operator's decoder does.
func ReadForecastState(state string) (ForecastWeek, error) {
	var w ForecastWeek
	b, err := base64.StdEncoding.DecodeString(state)
	if err != nil {
		return w, fmt.Errorf("reading the forecast state: %w", err)
	}
	if len(b) != ForecastStateLen {
		return w, fmt.Errorf("forecast state is %d bytes, want %d", len(b), ForecastStateLen)
	}
	if b[0] != ForecastStateVersion {
		return w, fmt.Errorf("forecast state version %d, want %d", b[0], ForecastStateVersion)
	}
	for i := range w.Shares {
		w.Shares[i] = float64(b[forecastOffShares+i]) / forecastShareScale
	}
	w.Hours = int64(binary.BigEndian.Uint32(b[forecastOffFolds:]))
	if p := int64(binary.BigEndian.Uint64(b[forecastOffPerson:])); p != 0 {
		w.LastPerson = time.Unix(p, 0).UTC()
	}
	return w, nil
}

// WriteForecastState writes w as a version-2 state, for tests of what
// reads it: only what ReadForecastState reads is set, so the operator
// refuses it (it names no zone) and starts afresh.
func WriteForecastState(w ForecastWeek) string {
	b := make([]byte, ForecastStateLen)
	b[0] = ForecastStateVersion
	binary.BigEndian.PutUint32(b[forecastOffFolds:], uint32(min(max(w.Hours, 0), math.MaxUint32)))
	if !w.LastPerson.IsZero() {
		binary.BigEndian.PutUint64(b[forecastOffPerson:], uint64(w.LastPerson.Unix()))
	}
	for i, s := range w.Shares {
		b[forecastOffShares+i] = uint8(min(max(s, 0), 1) * forecastShareScale)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// LastWeek is status.forecast.lastWeek read: per slot, whether a person
// came in its last hour and whether it was usually busy when that hour
// began.
// +kubebuilder:object:generate=false
type LastWeek struct {
	Person, Busy [ForecastSlots]bool
}

// EncodeLastWeek writes w as status.forecast.lastWeek.
func EncodeLastWeek(w LastWeek) string {
	b := make([]byte, 2*forecastWeekBytes)
	for i := range ForecastSlots {
		if w.Person[i] {
			b[i/8] |= 0x80 >> (i % 8)
		}
		if w.Busy[i] {
			b[forecastWeekBytes+i/8] |= 0x80 >> (i % 8)
		}
	}
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeLastWeek reads status.forecast.lastWeek; empty is an empty week. A
// value of another length is an error, never a panic.
func DecodeLastWeek(s string) (LastWeek, error) {
	var w LastWeek
	if s == "" {
		return w, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return w, fmt.Errorf("reading the forecast's last week: %w", err)
	}
	if len(b) != 2*forecastWeekBytes {
		return w, fmt.Errorf("forecast's last week is %d bytes, want %d", len(b), 2*forecastWeekBytes)
	}
	for i := range ForecastSlots {
		w.Person[i] = b[i/8]&(0x80>>(i%8)) != 0
		w.Busy[i] = b[forecastWeekBytes+i/8]&(0x80>>(i%8)) != 0
	}
	return w, nil
}
