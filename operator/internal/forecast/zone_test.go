package forecast

import (
	"bytes"
	"testing"
	"time"

	"napwake.dev/operator/internal/civil"
)

// A workload learns in UTC until spec.forecast names its team's zone: the
// forecast moved to that zone must be the one learned there from the
// start. Office days in Berlin, 09:00 to 17:30, fall within UTC days, so
// every gap and first arrival has one reading in both zones, and the two
// states encode to the same bytes.
func TestMovingTheZoneKeepsWhatWasLearned(t *testing.T) {
	set := Settings{IdleAfter: idle}
	begin := local(berlin, 6, 1, 3, 0) // a Monday, 01:00 UTC: the same day in both zones
	there, utc := New(berlin, begin, set), New(time.UTC, begin, set)
	liveIn(berlin, begin, 22, weekdays, officeDay, there, utc)

	moved := utc.In(berlin)
	if moved.Location() != berlin {
		t.Fatalf("moved forecast counts in %s", moved.Location())
	}
	if !bytes.Equal(moved.Encode(), there.Encode()) {
		t.Errorf("moved from UTC, the state differs from the one learned in Berlin:\n%s", diffState(moved, there))
	}
	at := local(berlin, 6, 24, 12, 40)
	moved.RecordPerson(local(berlin, 6, 24, 12, 5))
	there.RecordPerson(local(berlin, 6, 24, 12, 5))
	if a, b := moved.Hold(at), there.Hold(at); a != b || !a.Act {
		t.Errorf("moved forecast holds %+v, the one learned in Berlin %+v (want it to hold)", a, b)
	}
	if utc.In(time.UTC) != utc {
		t.Error("moving to its own zone copies the forecast")
	}
}

// A first arrival after midnight UTC in New York is the evening before
// there: it moves to that day, and a day nobody came moves with its noon.
func TestMovingTheZoneMovesArrivalsToTheirLocalDay(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	set := Settings{IdleAfter: idle}
	f := New(time.UTC, local(time.UTC, 6, 1, 0, 30), set)
	f.RecordPerson(local(time.UTC, 6, 2, 1, 30)) // Tue 01:30 UTC: Mon 21:30 in New York
	f.Advance(local(time.UTC, 6, 4, 12, 0))      // Wednesday, Thursday morning: nobody
	g := f.In(ny)
	mon, minute := civil.Day(local(ny, 6, 1, 21, 30), ny)
	if got := g.arrivals[place(mon)]; got != uint16(minute) {
		t.Errorf("Monday's first arrival in New York = %d, want %d (21:30)", got, minute)
	}
	// Tuesday in New York began in UTC's Tuesday, whose first arrival
	// moved to Monday: what came later that day is not known.
	tue, _ := civil.Day(local(ny, 6, 2, 12, 0), ny)
	wed, _ := civil.Day(local(ny, 6, 3, 12, 0), ny)
	thu, _ := civil.Day(local(ny, 6, 4, 8, 0), ny)
	if g.arrivals[place(tue)] != arrivalUnknown || g.arrivals[place(wed)] != arrivalNone || g.arrivals[place(thu)] != arrivalNone {
		t.Errorf("Tuesday, Wednesday, Thursday = %d, %d, %d; want not known (%d), nobody, nobody (%d)",
			g.arrivals[place(tue)], g.arrivals[place(wed)], g.arrivals[place(thu)], arrivalUnknown, arrivalNone)
	}
	if !g.LastPerson().Equal(f.LastPerson()) || g.day() != thu {
		t.Errorf("moved: last person %s, day %d; want %s, %d (Thursday 08:00 there)", g.LastPerson(), g.day(), f.LastPerson(), thu)
	}
}

// diffState names the encoded fields that differ.
func diffState(a, b *Forecast) string {
	ea, eb := a.Encode(), b.Encode()
	out := ""
	for _, f := range []struct {
		name     string
		from, to int
	}{{"zone", offZone, offHour}, {"hour", offHour, offFolds}, {"folds", offFolds, offFlags}, {"flags", offFlags, offPerson},
		{"person", offPerson, offResumes}, {"resumes", offResumes, offHolds}, {"holds", offHolds, offArrivals},
		{"arrivals", offArrivals, offGapCount}, {"gaps", offGapCount, EncodedLen}} {
		if !bytes.Equal(ea[f.from:f.to], eb[f.from:f.to]) {
			out += f.name + " "
		}
	}
	return out
}
