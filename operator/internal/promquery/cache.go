package promquery

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Reuse is how long an answer stands: the reconciles of one pause or wake
// (a few, each status write sets off the next) ask Prometheus once.
const Reuse = 10 * time.Second

// Asker runs an activity query; Client is one.
type Asker interface {
	Active(ctx context.Context, query string) (bool, error)
}

var _ Asker = (*Client)(nil)

// Cache answers each query from its last answer, error included, for
// Reuse after it was asked; then it asks next again. Answers are kept by
// the query's text: two workloads with the same query share one.
type Cache struct {
	next  Asker
	clock clock.PassiveClock

	mu      sync.Mutex
	answers map[string]answer
}

type answer struct {
	at     time.Time
	active bool
	err    error
}

var _ Asker = (*Cache)(nil)

// NewCache returns a Cache in front of next, timed by clk.
func NewCache(next Asker, clk clock.PassiveClock) *Cache {
	return &Cache{next: next, clock: clk, answers: map[string]answer{}}
}

// Active answers from the cache when the query was asked less than Reuse
// ago (and not in what is now the future: a clock set back asks again),
// else asks next and keeps its answer. Two callers asking at once may both
// ask next.
func (c *Cache) Active(ctx context.Context, query string) (bool, error) {
	now := c.clock.Now()
	c.mu.Lock()
	a, ok := c.answers[query]
	c.mu.Unlock()
	if ok && fresh(a, now) {
		return a.active, a.err
	}
	active, err := c.next.Active(ctx, query)
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, old := range c.answers { // forget what is no longer fresh, queries no longer asked too
		if !fresh(old, now) {
			delete(c.answers, q)
		}
	}
	c.answers[query] = answer{at: now, active: active, err: err}
	return active, err
}

func fresh(a answer, now time.Time) bool {
	return !now.Before(a.at) && now.Sub(a.at) < Reuse
}
