package forecast

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"napwake.dev/operator/internal/civil"
)

// The encoded state, version 2, big-endian (docs/forecast.md#what-it-keeps):
//
//	0         version (2)
//	1..4      FNV-1a of the zone's name: a forecast learned in another zone is refused
//	5..12     hour being filled (local hour number)
//	13..16    hours ended since the forecast began
//	17        flags: bit 0, a person was active in the hour being filled
//	18..25    latest person-caused activity, Unix seconds (0: none)
//	26        resume times recorded (0 to 10); 27 the next one's place in the ring
//	28..47    ten resume times, seconds
//	48..215   168 hourly holds (SlotHolds, 255ths), Monday 00:00 first: what the
//	          plugin draws; derived, so Decode ignores them
//	216..271  28 first arrivals, by local day mod 28: minute of the day,
//	          0xfffe nobody, 0xffff not watched
//	272       gaps kept (0 to 128); 273 the next one's place in the ring
//	274..657  128 gaps of 3 bytes: (minute of the local week / 5) << 5 | age in
//	          days (0 to 31), then the length in minutes (1 to 240; 0: none)
//
// Version 1 (the hourly shares of an older operator) is refused with
// ErrOldVersion.
const (
	version     = 2
	offZone     = 1
	offHour     = 5
	offFolds    = 13
	offFlags    = 17
	offPerson   = 18
	offResumes  = 26
	offRing     = 28
	offHolds    = offRing + 2*resumeSamples
	offArrivals = offHolds + Slots
	offGapCount = offArrivals + 2*ArrivalDays
	offGaps     = offGapCount + 2
	gapBytes    = 3
	// EncodedLen is the length of an encoded forecast: 658 bytes, 880 in
	// base64.
	EncodedLen = offGaps + gapBytes*Gaps
	flagHit    = 1
	holdScale  = 255
	// maxHour bounds a decoded hour number (245,000 years either side of
	// 1970), so times computed from it stay far from overflow.
	maxHour = math.MaxInt32
)

// ErrZoneChanged is returned by Decode for a forecast learned in another
// zone: its times of day would be read wrong, so the caller starts afresh.
var ErrZoneChanged = errors.New("forecast was learned in another time zone")

// ErrOldVersion is returned by Decode for a state an older operator wrote
// (hourly shares): it says nothing the gaps can use, so the caller starts
// afresh and says so once.
var ErrOldVersion = errors.New("forecast state is from an older version: no history yet")

// Encode returns the whole state in EncodedLen bytes.
func (f *Forecast) Encode() []byte {
	b := make([]byte, EncodedLen)
	b[0] = version
	binary.BigEndian.PutUint32(b[offZone:], zoneHash(f.zone))
	binary.BigEndian.PutUint64(b[offHour:], uint64(f.hour))
	binary.BigEndian.PutUint32(b[offFolds:], f.folds)
	if f.hit {
		b[offFlags] = flagHit
	}
	if !f.lastPerson.IsZero() {
		binary.BigEndian.PutUint64(b[offPerson:], uint64(f.lastPerson.Unix()))
	}
	b[offResumes], b[offResumes+1] = f.resumes.n, f.resumes.next
	for i, s := range f.resumes.seconds {
		binary.BigEndian.PutUint16(b[offRing+2*i:], s)
	}
	for i, h := range f.SlotHolds() {
		b[offHolds+i] = uint8(math.Round(h * holdScale))
	}
	for i, a := range f.arrivals {
		binary.BigEndian.PutUint16(b[offArrivals+2*i:], a)
	}
	b[offGapCount], b[offGapCount+1] = uint8(f.count), uint8(f.next)
	today := f.day()
	for i, g := range f.gaps {
		if g.length == 0 {
			continue
		}
		o := offGaps + gapBytes*i
		binary.BigEndian.PutUint16(b[o:], uint16(g.minute/5)<<5|uint16(today-g.day))
		b[o+2] = uint8(g.length)
	}
	return b
}

// Decode reads a state written by Encode, to be counted in loc with s. A
// value of the wrong length or version (ErrOldVersion for an older
// operator's), from another zone (ErrZoneChanged), or with a field out of
// range is an error, never a panic.
func Decode(b []byte, loc *time.Location, s Settings) (*Forecast, error) {
	if len(b) > 0 && b[0] == 1 {
		return nil, ErrOldVersion
	}
	if len(b) != EncodedLen {
		return nil, fmt.Errorf("forecast state is %d bytes, want %d", len(b), EncodedLen)
	}
	if b[0] != version {
		return nil, fmt.Errorf("forecast state version %d, want %d", b[0], version)
	}
	f := New(loc, time.Unix(0, 0), s)
	if binary.BigEndian.Uint32(b[offZone:]) != zoneHash(f.zone) {
		return nil, fmt.Errorf("decoding forecast state for %s: %w", f.zone, ErrZoneChanged)
	}
	f.hour = int64(binary.BigEndian.Uint64(b[offHour:]))
	if f.hour > maxHour || f.hour < -maxHour {
		return nil, fmt.Errorf("forecast state's hour %d is out of range", f.hour)
	}
	f.folds = binary.BigEndian.Uint32(b[offFolds:])
	if b[offFlags]&^flagHit != 0 {
		return nil, fmt.Errorf("forecast state has unknown flags %#x", b[offFlags])
	}
	f.hit = b[offFlags]&flagHit != 0
	if p := int64(binary.BigEndian.Uint64(b[offPerson:])); p != 0 {
		// A person within the hours counted, a day's offset either way.
		earliest, latest := int64(-maxHour-civil.HoursPerDay)*3600, (f.hour+1+civil.HoursPerDay)*3600
		if p < earliest || p > latest {
			return nil, fmt.Errorf("forecast state's last person %d is out of range", p)
		}
		f.lastPerson = time.Unix(p, 0)
	}
	if err := f.resumes.decode(b[offResumes:offHolds]); err != nil {
		return nil, err
	}
	for i := range f.arrivals {
		a := binary.BigEndian.Uint16(b[offArrivals+2*i:])
		if a >= civil.MinutesPerDay && a != arrivalNone && a != arrivalUnknown {
			return nil, fmt.Errorf("forecast state's first arrival %d is out of range", a)
		}
		f.arrivals[i] = a
	}
	if err := f.decodeGaps(b); err != nil {
		return nil, err
	}
	return f, nil
}

// decodeGaps reads the gap ring of b into f, whose hour is set.
func (f *Forecast) decodeGaps(b []byte) error {
	count, next := int(b[offGapCount]), int(b[offGapCount+1])
	if count > Gaps || next >= Gaps || (count < Gaps && next != count) {
		return fmt.Errorf("forecast state's gap ring (%d, next %d) is out of range", count, next)
	}
	f.count, f.next = count, next
	today := f.day()
	for i := range f.gaps {
		o := offGaps + gapBytes*i
		v, l := binary.BigEndian.Uint16(b[o:]), int(b[o+2])
		switch {
		case l == 0 && v == 0:
			continue
		case l == 0 || l > int(maxGap/time.Minute) || i >= count:
			return fmt.Errorf("forecast state's gap %d (%#x, %d minutes) is out of range", i, v, l)
		}
		minute, age := int(v>>5)*5, int64(v&0x1f)
		day := today - age
		if minute >= civil.MinutesPerDay*civil.DaysPerWeek || civil.Weekday(day) != minute/civil.MinutesPerDay {
			return fmt.Errorf("forecast state's gap %d begins at minute %d of the week, %d days ago: not that weekday", i, minute, age)
		}
		f.gaps[i] = gap{day: day, minute: minute, length: l}
	}
	return nil
}

func zoneHash(zone string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(zone)) // writing to a hash cannot fail
	return h.Sum32()
}
