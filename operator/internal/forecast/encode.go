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

// The encoded state, version 1, big-endian:
//
//	0       version (1)
//	1..4    FNV-1a of the zone's name: a week learned in another zone is refused
//	5..12   hour being filled (local hour number)
//	13..16  hours ended since the forecast began
//	17      flags: bit 0, a person was active in the hour being filled
//	18..25  latest person-caused activity, Unix seconds (0: none)
//	26      resume times recorded (0 to 10); 27 the next one's place in the ring
//	28..47  ten resume times, seconds
//	48..215 168 shares, Monday 00:00 first, in 255ths
const (
	version    = 1
	offZone    = 1
	offHour    = 5
	offFolds   = 13
	offFlags   = 17
	offPerson  = 18
	offResumes = 26
	offRing    = 28
	offShares  = offRing + 2*resumeSamples
	// EncodedLen is the length of an encoded forecast.
	EncodedLen = offShares + Slots
	flagHit    = 1
	// maxHour bounds a decoded hour number (245,000 years either side of
	// 1970), so times computed from it stay far from overflow.
	maxHour = math.MaxInt32
)

// ErrZoneChanged is returned by Decode for a week learned in another zone:
// its slots would be read at the wrong hours, so the caller starts afresh.
var ErrZoneChanged = errors.New("forecast was learned in another time zone")

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
	copy(b[offShares:], f.share[:])
	return b
}

// Decode reads a state written by Encode, to be counted in loc. A value of
// the wrong length or version, from another zone (ErrZoneChanged), or with a
// field out of range is an error, never a panic.
func Decode(b []byte, loc *time.Location) (*Forecast, error) {
	if len(b) != EncodedLen {
		return nil, fmt.Errorf("forecast state is %d bytes, want %d", len(b), EncodedLen)
	}
	if b[0] != version {
		return nil, fmt.Errorf("forecast state version %d, want %d", b[0], version)
	}
	f := &Forecast{loc: loc, zone: loc.String()}
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
	r := &f.resumes
	r.n, r.next = b[offResumes], b[offResumes+1]
	if r.n > resumeSamples || r.next >= resumeSamples || (r.n < resumeSamples && r.next != r.n) {
		return nil, fmt.Errorf("forecast state's resume ring (%d, next %d) is out of range", r.n, r.next)
	}
	for i := range r.seconds {
		r.seconds[i] = binary.BigEndian.Uint16(b[offRing+2*i:])
		if i >= int(r.n) && r.seconds[i] != 0 {
			return nil, fmt.Errorf("forecast state has resume time %d past its count %d", i, r.n)
		}
	}
	copy(f.share[:], b[offShares:])
	return f, nil
}

func zoneHash(zone string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(zone)) // writing to a hash cannot fail
	return h.Sum32()
}
