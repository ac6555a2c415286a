package forecast

import (
	"math"
	"testing"
	"time"
)

func TestAwakeBudget(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	h := time.Hour
	for _, tc := range []struct {
		name  string
		build func() AwakeBudget
		want  float64
	}{
		{"empty", func() AwakeBudget { return AwakeBudget{} }, 0},
		{"one stretch: an hour added to four of idleness", func() AwakeBudget {
			return AwakeBudget{}.Add(t0, h, 4*h)
		}, 0.25},
		{"a week-old hold counts for 1/e of today's", func() AwakeBudget {
			return AwakeBudget{}.Add(t0, 10*h, 0).Add(t0.Add(BudgetWeek), 0, 10*h)
		}, 1 / math.E},
		{"a busy month long past leaves this week's share to this week", func() AwakeBudget {
			b := AwakeBudget{}
			for d := range 30 {
				b = b.Add(t0.Add(time.Duration(d)*24*h), 8*h, 8*h)
			}
			at := t0.Add(90 * 24 * h)
			return b.Add(at, 0, 40*h).Add(at.Add(h), 2*h, 0)
		}, 0.05},
		{"a stretch older than the last counts as of the last", func() AwakeBudget {
			return AwakeBudget{}.Add(t0, h, 2*h).Add(t0.Add(-BudgetWeek), h, 0)
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.build().Share(); math.Abs(got-tc.want) > 0.01 {
				t.Errorf("Share() = %.4f, want %.4f", got, tc.want)
			}
		})
	}
}
