package schedule

import (
	"strings"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestReadOverrides(t *testing.T) {
	now := utc("2026-10-23T18:00:00Z")
	const (
		later   = "2026-10-23T20:00:00Z"
		earlier = "2026-10-23T17:00:00Z"
	)
	for _, tc := range []struct {
		name       string
		keepAwake  string
		pauseUntil string
		source     string
		want       Overrides
		problem    string
	}{
		{name: "no annotations override nothing", source: napwakev1alpha1.SourceRequest},
		{name: "keep-awake-until in the future keeps it awake", keepAwake: later, want: Overrides{KeepAwake: true, KeepAwakeUntil: utc(later)}},
		{name: "keep-awake-until in the past is ignored", keepAwake: earlier},
		{name: "keep-awake-until exactly now has expired", keepAwake: "2026-10-23T18:00:00Z"},
		{name: "keep-awake-until a fraction of a second ahead is in force", keepAwake: "2026-10-23T18:00:00.5Z", want: Overrides{KeepAwake: true, KeepAwakeUntil: utc(later).Add(-2*time.Hour + 500*time.Millisecond)}},
		{name: "pause-until refuses a request's wake", pauseUntil: later, source: napwakev1alpha1.SourceRequest, want: Overrides{KeepPaused: true, PauseUntil: utc(later)}},
		{name: "pause-until refuses the forecast's wake", pauseUntil: later, source: napwakev1alpha1.SourceForecast, want: Overrides{KeepPaused: true, PauseUntil: utc(later)}},
		{name: "pause-until refuses a schedule's wake", pauseUntil: later, source: "schedule", want: Overrides{KeepPaused: true, PauseUntil: utc(later)}},
		{name: "pause-until yields to wake-requested", pauseUntil: later, source: napwakev1alpha1.SourceWakeRequested, want: Overrides{PauseUntil: utc(later)}},
		{name: "pause-until in the past is ignored", pauseUntil: earlier, source: napwakev1alpha1.SourceRequest},
		{name: "pause-until in another offset is the instant it names: 19:30+02:00 has expired at 18:00Z", pauseUntil: "2026-10-23T19:30:00+02:00", source: napwakev1alpha1.SourceRequest},
		{name: "keep-awake-until wins over pause-until when both are in force", keepAwake: later, pauseUntil: later, source: napwakev1alpha1.SourceRequest, want: Overrides{KeepAwake: true, KeepAwakeUntil: utc(later)}},
		{name: "an expired keep-awake-until leaves pause-until in force", keepAwake: earlier, pauseUntil: later, source: napwakev1alpha1.SourceRequest, want: Overrides{KeepPaused: true, PauseUntil: utc(later)}},
		{name: "an unreadable keep-awake-until is reported and ignored", keepAwake: "tomorrow", pauseUntil: later, source: napwakev1alpha1.SourceRequest, want: Overrides{KeepPaused: true, PauseUntil: utc(later)}, problem: `napwake.dev/keep-awake-until "tomorrow" is not an RFC 3339 time`},
		{name: "an unreadable pause-until is reported and ignored", pauseUntil: "18:00", source: napwakev1alpha1.SourceRequest, problem: `napwake.dev/pause-until "18:00" is not an RFC 3339 time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ReadOverrides(tc.keepAwake, tc.pauseUntil, now, tc.source)
			problems := got.Problems
			got.Problems = nil
			if got.KeepAwake != tc.want.KeepAwake || !got.KeepAwakeUntil.Equal(tc.want.KeepAwakeUntil) ||
				got.KeepPaused != tc.want.KeepPaused || !got.PauseUntil.Equal(tc.want.PauseUntil) {
				t.Errorf("ReadOverrides = %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.problem == "" && len(problems) > 0:
				t.Errorf("problems %v, want none", problems)
			case tc.problem != "" && (len(problems) != 1 || !strings.Contains(problems[0].Error(), tc.problem)):
				t.Errorf("problems %v, want one containing %q", problems, tc.problem)
			}
		})
	}
}
