package testenv

import (
	"errors"
	"testing"
	"time"
)

// Eventually's defaults, for every suite: 20 s is far beyond any API round
// trip or reconcile on a loaded 2-core machine, and 50 ms keeps a passing
// test quick without spinning.
const (
	EventuallyTimeout  = 20 * time.Second
	EventuallyInterval = 50 * time.Millisecond
)

// Eventually polls check every EventuallyInterval until it returns nil, and
// fails the test with check's last error after EventuallyTimeout.
func Eventually(tb testing.TB, what string, check func() error) {
	tb.Helper()
	EventuallyWithin(tb, EventuallyTimeout, EventuallyInterval, what, check)
}

// EventuallyTrue is Eventually for a condition with nothing to say.
func EventuallyTrue(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	Eventually(tb, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

var errNotYet = errors.New("not yet")

// EventuallyWithin is Eventually with its own bound and interval, for the
// few waits (benchmarks of thousands of objects) the defaults do not fit.
func EventuallyWithin(tb testing.TB, limit, every time.Duration, what string, check func() error) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: still %v after %s", what, err, limit)
		}
		time.Sleep(every) // the interval of a wait bounded just above
	}
}
