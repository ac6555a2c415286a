package kube

import (
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ServerClock is the API server's clock, read from the Date header of its
// answers, so that what the doorman stamps (napwake.dev/last-request,
// last-activity) is the cluster's time, as the kubectl plugin's stamps
// are: a doorman node whose clock is a few seconds slow would otherwise
// stamp a wake before the pause it is for began, and the operator would
// not act on it (docs/troubleshooting.md). It implements
// clock.PassiveClock; until an answer carried a Date (or behind a proxy
// that drops it) it is the local clock.
type ServerClock struct {
	local clock.PassiveClock

	mu sync.Mutex
	// date is the latest Date header; seen is when it arrived, on local.
	date, seen time.Time
}

var _ clock.PassiveClock = (*ServerClock)(nil)

// NewServerClock returns a server clock that measures the time since the
// last Date on local (clock.RealClock in the doorman).
func NewServerClock(local clock.PassiveClock) *ServerClock {
	return &ServerClock{local: local}
}

// Wrap records the Date of every answer that passes through rt; it is a
// rest.Config's Wrap.
func (c *ServerClock) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			if d, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
				now := c.local.Now()
				c.mu.Lock()
				c.date, c.seen = d, now
				c.mu.Unlock()
			}
		}
		return resp, err
	})
}

// Now is the API server's time, never before it by more than the last
// answer's latency and at most a second after it: Date counts whole
// seconds, so the server's clock read between date and date + 1 s when it
// answered, and the local clock measures what has passed since.
func (c *ServerClock) Now() time.Time {
	now := c.local.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.date.IsZero() {
		return now
	}
	return c.date.Add(time.Second + now.Sub(c.seen))
}

// Since is the time elapsed since t on the API server's clock.
func (c *ServerClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
