package deps

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// l is a learned entry "ns/name" last seen ago before t0.
func l(s string, ago time.Duration) napwakev1alpha1.LearnedDependency {
	k := key(s)
	return napwakev1alpha1.LearnedDependency{Namespace: k.Namespace, Name: k.Name, LastSeen: metav1.NewTime(t0.Add(-ago))}
}

func TestLearn(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name    string
		list    []napwakev1alpha1.LearnedDependency
		callee  string
		seen    time.Time
		want    []napwakev1alpha1.LearnedDependency
		changed bool
	}{
		{
			name:    "a first call is learned",
			callee:  "p/db",
			seen:    t0.Add(-time.Minute),
			want:    []napwakev1alpha1.LearnedDependency{l("p/db", time.Minute)},
			changed: true,
		},
		{
			name:    "a callee seen again has its lastSeen moved, once in the list",
			list:    []napwakev1alpha1.LearnedDependency{l("p/cache", day), l("p/db", 3*day)},
			callee:  "p/db",
			seen:    t0,
			want:    []napwakev1alpha1.LearnedDependency{l("p/cache", day), l("p/db", 0)},
			changed: true,
		},
		{
			name:   "an older sighting does not move lastSeen back",
			list:   []napwakev1alpha1.LearnedDependency{l("p/db", time.Hour)},
			callee: "p/db",
			seen:   t0.Add(-2 * time.Hour),
			want:   []napwakev1alpha1.LearnedDependency{l("p/db", time.Hour)},
		},
		{
			name:   "a sighting in the same second as the stored one changes nothing",
			list:   []napwakev1alpha1.LearnedDependency{l("p/db", 0)},
			callee: "p/db",
			seen:   t0.Add(400 * time.Millisecond),
			want:   []napwakev1alpha1.LearnedDependency{l("p/db", 0)},
		},
		{
			name:    "an edge unseen for exactly 7 days is dropped",
			list:    []napwakev1alpha1.LearnedDependency{l("p/cache", 7*day), l("p/db", 7*day-time.Second)},
			want:    []napwakev1alpha1.LearnedDependency{l("p/db", 7*day-time.Second)},
			changed: true,
		},
		{
			name:   "a sighting 7 days old teaches nothing",
			callee: "p/db",
			seen:   t0.Add(-7 * day),
		},
		{
			name:    "a sighting in the future counts as now",
			callee:  "p/db",
			seen:    t0.Add(48 * time.Hour),
			want:    []napwakev1alpha1.LearnedDependency{l("p/db", 0)},
			changed: true,
		},
		{
			name:    "repeats in the stored list merge, keeping the latest, sorted by name",
			list:    []napwakev1alpha1.LearnedDependency{l("q/z", 0), l("p/db", 2*day), l("p/db", time.Hour)},
			want:    []napwakev1alpha1.LearnedDependency{l("p/db", time.Hour), l("q/z", 0)},
			changed: true,
		},
		{
			name:    "entries without a namespace or name are dropped",
			list:    []napwakev1alpha1.LearnedDependency{l("/db", 0), l("p/", 0), l("p/db", 0)},
			want:    []napwakev1alpha1.LearnedDependency{l("p/db", 0)},
			changed: true,
		},
		{
			name:   "an empty callee teaches nothing",
			list:   []napwakev1alpha1.LearnedDependency{l("p/db", 0)},
			callee: "/",
			seen:   t0,
			want:   []napwakev1alpha1.LearnedDependency{l("p/db", 0)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			callee := Key{}
			if tc.callee != "" {
				callee = key(tc.callee)
			}
			got, changed := Learn(tc.list, callee, tc.seen, t0)
			eq(t, "list", got, tc.want)
			eq(t, "changed", changed, tc.changed)
		})
	}
}

func TestLearnKeepsTheMostRecentlySeen64(t *testing.T) {
	var list []napwakev1alpha1.LearnedDependency
	for i := range MaxLearned {
		list = append(list, l(fmt.Sprintf("p/w%02d", i), time.Duration(i+1)*time.Minute))
	}
	got, changed := Learn(list, key("p/new"), t0, t0)
	eq(t, "changed", changed, true)
	eq(t, "length", len(got), MaxLearned)
	eq(t, "new kept", got[0], l("p/new", 0))
	for _, e := range got {
		if e.Name == "w63" {
			t.Fatalf("the least recently seen stayed")
		}
	}
	got, _ = Learn(list, key("p/old"), t0.Add(-2*time.Hour), t0)
	for _, e := range got {
		if e.Name == "old" {
			t.Fatalf("a sighting older than all 64 pushed out a newer one")
		}
	}
}

func TestExpire(t *testing.T) {
	list := []napwakev1alpha1.LearnedDependency{l("p/a", 8*24*time.Hour), l("p/b", time.Hour)}
	got, changed := Expire(list, t0)
	eq(t, "list", got, []napwakev1alpha1.LearnedDependency{l("p/b", time.Hour)})
	eq(t, "changed", changed, true)
	_, changed = Expire(got, t0)
	eq(t, "changed again", changed, false)
	eq(t, "next expiry", NextExpiry(list), t0.Add(-24*time.Hour))
	eq(t, "no expiry", NextExpiry(nil), time.Time{})
	got, changed = Expire(nil, t0)
	eq(t, "empty", got == nil && !changed, true)
}
