package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"napwake.dev/shared/onewake"
)

// ActivityEvery is how often a workload with connections passing through
// the doorman is reported active: the operator's idle clock moves with
// napwake.dev/last-activity, and a minute is far below any idleAfter.
const ActivityEvery = 30 * time.Second

// passingActivity counts the connections passing through to each
// workload, so they count as its activity
// (docs/design/time.md#connections-passing-through-are-activity:
// connections the doorman passes through during a wake, its linger and
// its drain are activity too).
type passingActivity struct {
	mu  sync.Mutex
	per map[string]*passingOf
}

type passingOf struct {
	w Workload
	n int
}

// add counts a connection to w starting (+1) or ending (-1) its passing.
func (a *passingActivity) add(w Workload, delta int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.per == nil {
		a.per = map[string]*passingOf{}
	}
	p := a.per[w.Key()]
	if p == nil {
		p = &passingOf{w: w}
		a.per[w.Key()] = p
	}
	if p.n += delta; p.n <= 0 {
		delete(a.per, w.Key())
	}
}

// busy returns the workloads with a connection passing now.
func (a *passingActivity) busy() []Workload {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Workload, 0, len(a.per))
	for _, p := range a.per {
		out = append(out, p.w)
	}
	return out
}

// report stamps each workload with a connection passing, every
// ActivityEvery, until ctx ends.
func (a *passingActivity) report(ctx context.Context, c clock.WithTicker, hooks Hooks, log logr.Logger) {
	t := c.NewTicker(ActivityEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		for _, w := range a.busy() {
			actx, cancel := context.WithTimeout(ctx, onewake.PatchTimeout)
			if err := hooks.Active(actx, w); err != nil {
				log.Error(err, "Reporting connections passing through as activity", "workload", w.Key())
			}
			cancel()
		}
	}
}
