package controller

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// copyTurnedAway brings status.turnedAway up to date from the doorman's
// napwake.dev/turned-away annotation ("<pausedAt RFC 3339>/<count>", the
// doorman pods' counts summed, flushed about once a minute): "What it turns
// away" reads it in status, as kubectl napwake status does. An annotation
// that is missing or cannot be read leaves status as it is, so the count of
// the last pause stays once the workload is awake.
func copyTurnedAway(mw *napwakev1alpha1.ManagedWorkload) {
	at, n, ok := napwakev1alpha1.ParseTurnedAway(mw.Annotations[napwakev1alpha1.AnnotationTurnedAway])
	if !ok {
		return
	}
	mw.Status.TurnedAway = &napwakev1alpha1.TurnedAwayStatus{PausedAt: metav1.NewTime(at), Requests: n}
}

// turnedAwayEqual reports whether a and b count the same.
func turnedAwayEqual(a, b *napwakev1alpha1.TurnedAwayStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Requests == b.Requests && a.PausedAt.Equal(&b.PausedAt)
}
