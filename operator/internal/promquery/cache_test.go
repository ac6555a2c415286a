package promquery

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// countingAsker answers every query with active and err, counting the
// queries it was asked.
type countingAsker struct {
	active bool
	err    error
	asked  map[string]int
}

func (a *countingAsker) Active(_ context.Context, query string) (bool, error) {
	a.asked[query]++
	return a.active, a.err
}

// The reconciles of one pause or wake ask Prometheus once: an answer, an
// error too, stands for 10 s for its query.
func TestCache(t *testing.T) {
	errBad := errors.New("query failed (bad_data): parse error")
	for _, tc := range []struct {
		name   string
		answer bool
		err    error
		// then runs after the first Active: steps the clock, asks again.
		then      func(clk *clocktesting.FakeClock, c *Cache) error
		wantAsked map[string]int
	}{
		{"an answer 9 s old stands", true, nil, func(clk *clocktesting.FakeClock, c *Cache) error {
			clk.Step(9 * time.Second)
			return ask(c, "sum(queue_length)", true)
		}, map[string]int{"sum(queue_length)": 1}},
		{"an answer 10 s old is asked again", true, nil, func(clk *clocktesting.FakeClock, c *Cache) error {
			clk.Step(Reuse)
			return ask(c, "sum(queue_length)", true)
		}, map[string]int{"sum(queue_length)": 2}},
		{"another query is asked at once", false, nil, func(_ *clocktesting.FakeClock, c *Cache) error {
			return ask(c, "sum(other_queue_length)", false)
		}, map[string]int{"sum(queue_length)": 1, "sum(other_queue_length)": 1}},
		{"a clock set back asks again", true, nil, func(clk *clocktesting.FakeClock, c *Cache) error {
			clk.SetTime(clk.Now().Add(-time.Second))
			return ask(c, "sum(queue_length)", true)
		}, map[string]int{"sum(queue_length)": 2}},
		{"an error stands as an answer does", false, errBad, func(clk *clocktesting.FakeClock, c *Cache) error {
			clk.Step(5 * time.Second)
			if _, err := c.Active(context.Background(), "sum(queue_length)"); !errors.Is(err, errBad) {
				return fmt.Errorf("error %w, want the first answer's", err)
			}
			return nil
		}, map[string]int{"sum(queue_length)": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 10, 23, 18, 0, 0, 0, time.UTC))
			next := &countingAsker{active: tc.answer, err: tc.err, asked: map[string]int{}}
			c := NewCache(next, clk)
			if active, err := c.Active(context.Background(), "sum(queue_length)"); active != tc.answer || !errors.Is(err, tc.err) {
				t.Fatalf("Active = %v, %v; want %v, %v", active, err, tc.answer, tc.err)
			}
			if err := tc.then(clk, c); err != nil {
				t.Fatal(err)
			}
			if len(next.asked) != len(tc.wantAsked) {
				t.Errorf("asked %v, want %v", next.asked, tc.wantAsked)
			}
			for q, n := range tc.wantAsked {
				if next.asked[q] != n {
					t.Errorf("asked %q %d times, want %d", q, next.asked[q], n)
				}
			}
		})
	}
}

// An answer no longer fresh is forgotten when another query is asked, so
// the cache holds only what was asked within Reuse.
func TestCacheForgetsStaleAnswers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 10, 23, 18, 0, 0, 0, time.UTC))
	c := NewCache(&countingAsker{asked: map[string]int{}}, clk)
	must(t, ask(c, "a", false))
	clk.Step(Reuse)
	must(t, ask(c, "b", false))
	if _, ok := c.answers["a"]; ok || len(c.answers) != 1 {
		t.Fatalf("answers %v, want only b's", c.answers)
	}
}

func ask(c *Cache, query string, want bool) error {
	active, err := c.Active(context.Background(), query)
	if err != nil {
		return err
	}
	if active != want {
		return fmt.Errorf("active %v for %s, want %v", active, query, want)
	}
	return nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
