package idlelevel

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func TestObserve(t *testing.T) {
	tests := []struct {
		name        string
		state       State
		at          time.Time
		milli       int64
		wantLows    []int64
		wantHour    time.Time
		wantChanged bool
	}{
		{"the first sample starts the day", State{}, t0.Add(17 * time.Minute), 30, []int64{30}, t0, true},
		{"a higher sample in the same hour changes nothing", State{Lows: []int64{30}, Hour: t0}, t0.Add(40 * time.Minute), 45, []int64{30}, t0, false},
		{"an equal sample in the same hour changes nothing", State{Lows: []int64{30}, Hour: t0}, t0.Add(40 * time.Minute), 30, []int64{30}, t0, false},
		{"a lower sample in the same hour is the hour's new low", State{Lows: []int64{5, 30}, Hour: t0}, t0.Add(59 * time.Minute), 28, []int64{5, 28}, t0, true},
		{"the next hour's sample is a new entry", State{Lows: []int64{30}, Hour: t0}, t0.Add(time.Hour), 31, []int64{30, 31}, t0.Add(time.Hour), true},
		{"hours without a sample are kept as None", State{Lows: []int64{30}, Hour: t0}, t0.Add(3*time.Hour + time.Minute), 2, []int64{30, None, None, 2}, t0.Add(3 * time.Hour), true},
		{"more than a day later only the new sample is left", State{Lows: []int64{30, 31}, Hour: t0}, t0.Add(30 * time.Hour), 4, append(slices.Repeat([]int64{None}, Hours-1), 4), t0.Add(30 * time.Hour), true},
		{"a clock that stepped back changes nothing", State{Lows: []int64{30}, Hour: t0}, t0.Add(-time.Minute), 1, []int64{30}, t0, false},
		{"a negative sample is ignored", State{Lows: []int64{30}, Hour: t0}, t0.Add(time.Hour), -1, []int64{30}, t0, false},
		{"a time in another zone is the same hour", State{Lows: []int64{30}, Hour: t0}, t0.Add(10 * time.Minute).In(time.FixedZone("x", 5*3600+1800)), 20, []int64{20}, t0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := Observe(tt.state, tt.at, tt.milli)
			if !slices.Equal(got.Lows, tt.wantLows) || !got.Hour.Equal(tt.wantHour) || changed != tt.wantChanged {
				t.Errorf("Observe = %v at %s changed %v, want %v at %s changed %v", got.Lows, got.Hour, changed, tt.wantLows, tt.wantHour, tt.wantChanged)
			}
		})
	}
}

func TestObserveKeepsOneDay(t *testing.T) {
	var s State
	for h := range 50 {
		s, _ = Observe(s, t0.Add(time.Duration(h)*time.Hour), int64(h))
	}
	if len(s.Lows) != Hours || s.Lows[0] != 26 || s.Lows[Hours-1] != 49 {
		t.Fatalf("after 50 hours Lows = %v, want 26..49", s.Lows)
	}
}

func TestObserveNeverChangesItsInput(t *testing.T) {
	in := State{Lows: []int64{30, 40}, Hour: t0}
	Observe(in, t0.Add(5*time.Minute), 1)
	Observe(in, t0.Add(2*time.Hour), 1)
	if !slices.Equal(in.Lows, []int64{30, 40}) {
		t.Fatalf("input changed to %v", in.Lows)
	}
}

func TestLevel(t *testing.T) {
	tests := []struct {
		name      string
		lows      []int64
		want      int64
		wantKnown bool
	}{
		{"nothing learned is level 0, unknown", nil, 0, false},
		{"only hours without samples is unknown", []int64{None, None}, 0, false},
		{"fewer than MinHours hours are not trusted", []int64{30, 31, 29, 30, 33}, 0, false},
		{"MinHours hours are: the 25th percentile", []int64{40, 30, 50, 60, 45, 35}, 35, true},
		{"a JVM's day: one restart at 0m barely moves it", []int64{0, 31, 29, 30, 33, 30, 28, 32}, 28, true},
		{"None entries are left out, and do not count as hours learned", []int64{None, 12, None, 10, 11, None, 13, 14, 10}, 10, true},
		{"hours without a sample do not make up MinHours", []int64{None, None, None, 10, 11, None, 13, 14}, 0, false},
		{"a busy day with quiet nights learns the nights", []int64{2, 2, 2, 2, 2, 2, 2, 2, 40, 45, 50, 60, 55, 50, 40, 40, 45, 60, 50, 3, 2, 2, 2, 2}, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, known := Level(State{Lows: tt.lows, Hour: t0})
			if got != tt.want || known != tt.wantKnown {
				t.Errorf("Level(%v) = %d, %v; want %d, %v", tt.lows, got, known, tt.want, tt.wantKnown)
			}
		})
	}
}

func TestBusy(t *testing.T) {
	jvm := State{Lows: []int64{30, 31, 29, 30, 32, 30}, Hour: t0} // level 30, busy from 45
	goApp := State{Lows: []int64{0, 1, 0, 0, 0, 1}, Hour: t0}     // level 0, busy from 1
	tests := []struct {
		name  string
		state State
		milli int64
		want  bool
	}{
		{"a JVM at its idle level is not busy", jvm, 30, false},
		{"a JVM just under half again its level is not busy", jvm, 44, false},
		{"a JVM at half again its level is busy", jvm, 45, true},
		{"a Go app idling at 0m is busy at 2m", goApp, 2, true},
		{"a Go app at 1m (an idle server's probe noise) is not busy", goApp, 1, false},
		{"with nothing learned, 2m is busy", State{}, 2, true},
		{"with nothing learned, 1m is not busy", State{}, 1, false},
		{"with nothing learned, 20m (the old fixed bar) is busy", State{}, 20, true},
		{"a JVM's first hours: its idle use keeps it up", State{Lows: []int64{30, 31}, Hour: t0}, 30, true},
		{"with nothing learned, 0m is not busy", State{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Busy(tt.state, tt.milli); got != tt.want {
				t.Errorf("Busy(%v, %d) = %v, want %v", tt.state.Lows, tt.milli, got, tt.want)
			}
		})
	}
}
