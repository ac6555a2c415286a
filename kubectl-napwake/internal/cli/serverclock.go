package cli

import (
	"net/http"
	"sync"
	"time"
)

// serverClock reads the API server's clock from the Date header of its
// answers, so what wake and pause stamp is the cluster's time, not the
// laptop's: a laptop a few minutes slow would otherwise stamp a time before
// the pause began, and nothing would happen
// (docs/design/time.md#clocks-that-are-off).
type serverClock struct {
	mu sync.Mutex
	// date is the latest Date header; seen is when it arrived, on this
	// machine's monotonic clock.
	date, seen time.Time
}

// wrap records the Date of every answer that passes through rt.
func (c *serverClock) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			if d, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
				c.mu.Lock()
				c.date, c.seen = d, time.Now()
				c.mu.Unlock()
			}
		}
		return resp, err
	})
}

// now is the API server's time: its last Date plus what has passed since,
// rounded up to the whole second (Date counts whole seconds, so this is
// never before the server's own clock by more than the request's latency).
// ok is false when no answer carried a Date, as behind a proxy that drops it.
func (c *serverClock) now() (t time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.date.IsZero() {
		return time.Time{}, false
	}
	t = c.date.Add(time.Since(c.seen))
	return t.Truncate(time.Second).Add(time.Second).UTC(), true
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
