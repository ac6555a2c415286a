package forecast

import (
	"math"
	"time"
)

// BudgetWeek is the time constant of AwakeBudget's decay: the awake time a
// forecast added a week ago counts for 1/e of what it added today.
const BudgetWeek = 7 * 24 * time.Hour

// AwakeBudget is what Settings.ExtraAwake is measured from for
// maxExtraAwake (docs/forecast.md#settings): the awake time the forecast
// added (holds, pre-wakes) and the awake time idleness alone used, both
// decayed over a week, so a busy month long past neither spends nor saves
// this week's budget. The zero value is an empty budget.
type AwakeBudget struct {
	// Added and Idle are seconds, as of At.
	Added, Idle float64
	At          time.Time
}

// Add counts an awake stretch that ended at t: added seconds the forecast
// added, idle seconds idleness alone would have used. A stretch older than
// At counts as of At (the budget does not go back in time).
func (b AwakeBudget) Add(t time.Time, added, idle time.Duration) AwakeBudget {
	b = b.decayTo(t)
	b.Added += added.Seconds()
	b.Idle += idle.Seconds()
	return b
}

// Share is the added awake time as a share of idleness alone's: the
// Settings.ExtraAwake a decision prices with (0 when nothing is counted).
func (b AwakeBudget) Share() float64 {
	if b.Added <= 0 {
		return 0
	}
	return b.Added / math.Max(b.Idle, 1)
}

func (b AwakeBudget) decayTo(t time.Time) AwakeBudget {
	if b.At.IsZero() {
		b.At = t
		return b
	}
	if d := t.Sub(b.At); d > 0 {
		k := math.Exp(-d.Seconds() / BudgetWeek.Seconds())
		b.Added, b.Idle, b.At = b.Added*k, b.Idle*k, t
	}
	return b
}
