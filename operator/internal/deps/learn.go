package deps

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// LearnedTTL is how long a learned edge lasts unseen
// (docs/design/dependencies.md#learned-dependencies):
// a week, so a weekly job's call keeps its edge.
const LearnedTTL = 7 * 24 * time.Hour

// MaxLearned bounds status.dependencies.learned: the CRD's MaxItems.
const MaxLearned = 64

// Learn folds one observation, "the caller was seen calling callee at seen",
// into the caller's learned list and drops what has expired by now. It
// returns the new list and whether it differs from list (no write is needed
// when it does not).
//
// The list comes back sorted by namespace and name, each callee once with
// its latest lastSeen. Times are kept at whole seconds, as the API stores
// them, so a list read back compares equal. A time after now counts as now:
// a clock ahead must not keep an edge for longer than a week. An entry
// unseen for LearnedTTL or more is dropped, and so is an observation that
// old. Past MaxLearned entries the least recently seen go (ties: the last
// by name). An entry without a namespace or name, or an empty callee, is
// dropped.
func Learn(list []napwakev1alpha1.LearnedDependency, callee Key, seen, now time.Time) ([]napwakev1alpha1.LearnedDependency, bool) {
	all := slices.Clone(list)
	if callee.Namespace != "" && callee.Name != "" {
		all = append(all, napwakev1alpha1.LearnedDependency{Namespace: callee.Namespace, Name: callee.Name, LastSeen: metav1.NewTime(seen)})
	}
	return tidy(list, all, now)
}

// Expire drops from list what has expired by now and tidies the rest as
// Learn does; it reports whether anything changed.
func Expire(list []napwakev1alpha1.LearnedDependency, now time.Time) ([]napwakev1alpha1.LearnedDependency, bool) {
	return tidy(list, slices.Clone(list), now)
}

// NextExpiry is when the first entry of list expires, zero for none: the
// caller requeues for then and calls Expire.
func NextExpiry(list []napwakev1alpha1.LearnedDependency) time.Time {
	var first time.Time
	for _, l := range list {
		if t := l.LastSeen.Add(LearnedTTL); first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first
}

// tidy makes all (a copy of list, maybe with one more entry) into the
// stored form and compares it with list.
func tidy(list, all []napwakev1alpha1.LearnedDependency, now time.Time) ([]napwakev1alpha1.LearnedDependency, bool) {
	now = now.UTC().Truncate(time.Second)
	for i := range all {
		t := all[i].LastSeen.UTC().Truncate(time.Second)
		if t.After(now) {
			t = now
		}
		all[i].LastSeen = metav1.NewTime(t)
	}
	all = slices.DeleteFunc(all, func(l napwakev1alpha1.LearnedDependency) bool {
		return l.Namespace == "" || l.Name == "" || now.Sub(l.LastSeen.Time) >= LearnedTTL
	})
	// Latest first within each callee, so Compact keeps the latest.
	slices.SortFunc(all, func(a, b napwakev1alpha1.LearnedDependency) int {
		if c := compareKeys(learnedKey(a), learnedKey(b)); c != 0 {
			return c
		}
		return b.LastSeen.Compare(a.LastSeen.Time)
	})
	all = slices.CompactFunc(all, func(a, b napwakev1alpha1.LearnedDependency) bool {
		return learnedKey(a) == learnedKey(b)
	})
	if len(all) > MaxLearned {
		slices.SortStableFunc(all, func(a, b napwakev1alpha1.LearnedDependency) int {
			return b.LastSeen.Compare(a.LastSeen.Time)
		})
		all = all[:MaxLearned]
		slices.SortFunc(all, func(a, b napwakev1alpha1.LearnedDependency) int {
			return compareKeys(learnedKey(a), learnedKey(b))
		})
	}
	if len(all) == 0 {
		all = nil
	}
	return all, !slices.EqualFunc(all, list, func(a, b napwakev1alpha1.LearnedDependency) bool {
		return learnedKey(a) == learnedKey(b) && a.LastSeen.Equal(&b.LastSeen)
	})
}

func learnedKey(l napwakev1alpha1.LearnedDependency) Key {
	return Key{Namespace: l.Namespace, Name: l.Name}
}
