package v1alpha1

import (
	"strconv"
	"strings"
	"time"
)

// FormatTurnedAway renders AnnotationTurnedAway: "<pausedAt RFC 3339>/<count>",
// the doorman pods' count of requests turned away in the pause that began
// at pausedAt.
func FormatTurnedAway(pausedAt time.Time, n int64) string {
	return pausedAt.UTC().Format(time.RFC3339) + "/" + strconv.FormatInt(n, 10)
}

// ParseTurnedAway reads AnnotationTurnedAway; ok is false for anything
// malformed (no slash, a time that is not RFC 3339, a count that is not a
// non-negative integer).
func ParseTurnedAway(s string) (pausedAt time.Time, n int64, ok bool) {
	at, count, found := strings.Cut(s, "/")
	if !found {
		return time.Time{}, 0, false
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return time.Time{}, 0, false
	}
	c, err := strconv.ParseInt(count, 10, 64)
	if err != nil || c < 0 {
		return time.Time{}, 0, false
	}
	return t.UTC(), c, true
}
