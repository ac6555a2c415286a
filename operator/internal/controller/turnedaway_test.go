package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestTheDoormansTurnedAwayCountReachesStatus(t *testing.T) {
	pausedAt := time.Date(2026, 10, 23, 18, 4, 12, 0, time.UTC)
	earlier := &napwakev1alpha1.TurnedAwayStatus{PausedAt: metav1.NewTime(pausedAt.Add(-time.Hour)), Requests: 9}
	cases := []struct {
		name       string
		annotation string
		status     *napwakev1alpha1.TurnedAwayStatus
		want       *napwakev1alpha1.TurnedAwayStatus
	}{
		{"a count is copied into status", "2026-10-23T18:04:12Z/312", nil,
			&napwakev1alpha1.TurnedAwayStatus{PausedAt: metav1.NewTime(pausedAt), Requests: 312}},
		{"a new pause's count replaces the last pause's", "2026-10-23T18:04:12Z/1", earlier,
			&napwakev1alpha1.TurnedAwayStatus{PausedAt: metav1.NewTime(pausedAt), Requests: 1}},
		{"no annotation leaves the last pause's count", "", earlier, earlier},
		{"an unreadable annotation leaves status as it is", "2026-10-23T18:04:12Z/-3", earlier, earlier},
		{"an annotation without a count leaves status as it is", "yesterday", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mw := &napwakev1alpha1.ManagedWorkload{}
			mw.Annotations = map[string]string{napwakev1alpha1.AnnotationTurnedAway: tc.annotation}
			mw.Status.TurnedAway = tc.status
			copyTurnedAway(mw)
			if !turnedAwayEqual(mw.Status.TurnedAway, tc.want) {
				t.Fatalf("status.turnedAway = %+v, want %+v", mw.Status.TurnedAway, tc.want)
			}
		})
	}
}
