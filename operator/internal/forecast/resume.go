package forecast

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"
)

const (
	// Buffer is added to the p90 resume time to make the pre-wake's lead. A
	// minute covers the reconcile that notices the slot, the wake's own writes
	// and the simulator's minute ticks; the p90 already covers the resume.
	// On napwake-devhours-v1, 30 s to 5 min move the cold starts cut by about
	// a point and the price per avoided cold start by about a minute
	// (docs/bench/forecast.md), so the smallest that is Ready on time wins.
	Buffer = time.Minute
	// DefaultResume stands in for the p90 before any resume was seen: a
	// minute is a small Deployment pulling a cached image.
	DefaultResume = time.Minute
	// resumeSamples: the p90 of the last ten resumes is the slowest but one,
	// so one pathological resume (an image pull on a new node) does not set
	// the lead for weeks.
	resumeSamples = 10
	// maxResumeSeconds is what a uint16 holds: 18 hours.
	maxResumeSeconds = math.MaxUint16
)

// resumes is a ring of the last resume times, in whole seconds.
type resumes struct {
	n, next uint8
	seconds [resumeSamples]uint16
}

// RecordResume records how long one wake of this workload took, from the
// wake to Ready.
func (f *Forecast) RecordResume(d time.Duration) {
	s := math.Ceil(d.Seconds())
	s = min(max(s, 0), maxResumeSeconds)
	r := &f.resumes
	r.seconds[r.next] = uint16(s)
	r.next = (r.next + 1) % resumeSamples
	r.n = min(r.n+1, resumeSamples)
}

// ResumeP90 returns the p90 (nearest rank) of the recent resume times, or
// DefaultResume when none was recorded.
func (f *Forecast) ResumeP90() time.Duration {
	r := f.resumes
	if r.n == 0 {
		return DefaultResume
	}
	s := slices.Clone(r.seconds[:r.n])
	slices.Sort(s)
	rank := int(math.Ceil(0.9*float64(len(s)))) - 1
	return time.Duration(s[rank]) * time.Second
}

// Lead is how long before the usual first arrival a pre-wake starts: ResumeP90 plus
// Buffer.
func (f *Forecast) Lead() time.Duration { return f.ResumeP90() + Buffer }

// decode reads the ring as Encode writes it at offResumes: the count, the
// next place, ten big-endian seconds.
func (r *resumes) decode(b []byte) error {
	r.n, r.next = b[0], b[1]
	if r.n > resumeSamples || r.next >= resumeSamples || (r.n < resumeSamples && r.next != r.n) {
		return fmt.Errorf("forecast state's resume ring (%d, next %d) is out of range", r.n, r.next)
	}
	for i := range r.seconds {
		r.seconds[i] = binary.BigEndian.Uint16(b[2+2*i:])
		if i >= int(r.n) && r.seconds[i] != 0 {
			return fmt.Errorf("forecast state has resume time %d past its count %d", i, r.n)
		}
	}
	return nil
}
