// Package firstbyte times wake-to-first-byte: a stand-in pod records when
// each held caller's first byte reaches it, and the spread from the moment a
// Ready pod appeared is reported as percentiles. The latency test and the
// benchmark program share it.
package firstbyte

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// Recorder collects first-byte arrival times.
type Recorder struct {
	mu       sync.Mutex
	arrivals []time.Time
	got      chan struct{}
}

// New returns a Recorder for up to n callers.
func New(n int) *Recorder { return &Recorder{got: make(chan struct{}, n)} }

// Serve is a stand-in pod's handler: it records the first byte's arrival,
// then drains and closes the connection.
func (r *Recorder) Serve(c net.Conn) {
	defer c.Close()
	b := make([]byte, 1)
	if _, err := c.Read(b); err == nil {
		r.mu.Lock()
		r.arrivals = append(r.arrivals, time.Now())
		r.mu.Unlock()
		r.got <- struct{}{}
	}
	_, _ = io.Copy(io.Discard, c)
}

// Wait returns once n first bytes arrived, or an error after timeout.
func (r *Recorder) Wait(n int, timeout time.Duration) error {
	deadline := time.After(timeout)
	for range n {
		select {
		case <-r.got:
		case <-deadline:
			return errors.New("not every held caller reached the pod")
		}
	}
	return nil
}

// Percentiles returns p50, p99 and the maximum of the arrivals after t0.
func (r *Recorder) Percentiles(t0 time.Time) (p50, p99, max time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.arrivals) == 0 {
		return 0, 0, 0
	}
	d := make([]time.Duration, len(r.arrivals))
	for i, a := range r.arrivals {
		d[i] = a.Sub(t0)
	}
	slices.Sort(d)
	return d[len(d)/2], d[(len(d)*99+99)/100-1], d[len(d)-1]
}
