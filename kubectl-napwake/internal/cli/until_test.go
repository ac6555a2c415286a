package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestParseUntil(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	fri := time.Date(2026, 10, 23, 14, 30, 0, 0, time.UTC) // 16:30 in Berlin (CEST)
	sat := time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC)  // 00:00 on Sunday in Berlin, the night the clocks go back
	for _, tc := range []struct {
		name  string
		value string
		now   time.Time
		loc   *time.Location
		want  time.Time
		err   string
	}{
		{name: "a duration is from now", value: "2h", now: fri, loc: time.UTC, want: fri.Add(2 * time.Hour)},
		{name: "a time of day later today is today's", value: "18:00", now: fri, loc: time.UTC, want: time.Date(2026, 10, 23, 18, 0, 0, 0, time.UTC)},
		{name: "a time of day already past is tomorrow's", value: "9:15", now: fri, loc: time.UTC, want: time.Date(2026, 10, 24, 9, 15, 0, 0, time.UTC)},
		{name: "a time of day is read in the schedule's zone", value: "18:00", now: fri, loc: berlin, want: time.Date(2026, 10, 23, 16, 0, 0, 0, time.UTC)},
		{name: "a time of day after the clocks go back has the new offset", value: "09:00", now: sat, loc: berlin, want: time.Date(2026, 10, 25, 8, 0, 0, 0, time.UTC)},
		{name: "an RFC 3339 time is taken as it is", value: "2026-10-24T08:00:00+02:00", now: fri, loc: berlin, want: time.Date(2026, 10, 24, 6, 0, 0, 0, time.UTC)},
		{name: "an empty value is refused", value: " ", now: fri, loc: time.UTC, err: "--until is empty"},
		{name: "a negative duration is not in the future", value: "-2h", now: fri, loc: time.UTC, err: "is not in the future (the cluster's time is 2026-10-23T14:30:00Z)"},
		{name: "a time in the past is not in the future", value: "2026-10-23T14:00:00Z", now: fri, loc: time.UTC, err: "not in the future"},
		{name: "more than a month ahead is refused", value: "2000h", now: fri, loc: time.UTC, err: "more than 31 days ahead"},
		{name: "an hour out of range is refused", value: "25:00", now: fri, loc: time.UTC, err: `"25:00" is not a time of day from 00:00 to 23:59`},
		{name: "a signed hour is refused", value: "+8:00", now: fri, loc: time.UTC, err: "not a time of day"},
		{name: "a word is refused, naming the forms", value: "tonight", now: fri, loc: time.UTC, err: `neither a duration ("2h", "90m"), a time of day ("18:00") nor an RFC 3339 time`},
		{name: "a broken RFC 3339 time is refused", value: "2026-10-23T25:00:00Z", now: fri, loc: time.UTC, err: "is not an RFC 3339 time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseUntil(tc.value, tc.now, tc.loc)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// FuzzParseUntil: whatever --until says, parseUntil must never panic, and a
// time it accepts is after now, at most 31 days ahead, in whole seconds.
func FuzzParseUntil(f *testing.F) {
	for _, s := range []string{"2h", "18:00", "9:15", "24:00", "2026-10-24T08:00:00+02:00", "", "-1h", "+8:00", "99999999999h", "1:1", "T", ":"} {
		f.Add(s)
	}
	now := time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := parseUntil(v, now, berlin)
		if err != nil {
			return
		}
		if !got.After(now) || got.Sub(now) > maxUntil || got.Nanosecond() != 0 {
			t.Fatalf("parseUntil(%q) = %v at %v", v, got, now)
		}
	})
}

// TestPauseAndWakeUntilWriteTheOverrides: pause --until writes pause-until
// and pause-requested and removes keep-awake-until; wake --until 18:00 writes the next 18:00 in
// the schedule's zone as keep-awake-until and removes pause-until.
func TestPauseAndWakeUntilWriteTheOverrides(t *testing.T) {
	ns := namespace(t, "until")
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api", Annotations: map[string]string{napwakev1alpha1.AnnotationKeepAwakeUntil: "2030-01-01T00:00:00Z"}},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{Schedule: &napwakev1alpha1.ScheduleSpec{
			Awake: []napwakev1alpha1.AwakeWindow{"Mon-Fri 08:00-19:00"}, TimeZone: "Asia/Kolkata"}},
		Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning},
	})
	get := func() map[string]string {
		t.Helper()
		var mw napwakev1alpha1.ManagedWorkload
		if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "api"}, &mw); err != nil {
			t.Fatal(err)
		}
		return mw.Annotations
	}

	before := time.Now().Truncate(time.Second)
	mustSucceed(t, run(t, adminKubeconfig, nil, "pause", "api", "-n", ns, "--until", "2h"))
	a := get()
	until, err := time.Parse(time.RFC3339, a[napwakev1alpha1.AnnotationPauseUntil])
	if err != nil || until.Before(before.Add(2*time.Hour)) || until.After(time.Now().Add(2*time.Hour+2*time.Second)) {
		t.Errorf("pause-until %q, want two hours after the API server's now", a[napwakev1alpha1.AnnotationPauseUntil])
	}
	if _, ok := a[napwakev1alpha1.AnnotationKeepAwakeUntil]; ok {
		t.Errorf("keep-awake-until %q is left, want it removed", a[napwakev1alpha1.AnnotationKeepAwakeUntil])
	}
	if a[napwakev1alpha1.AnnotationPauseRequested] == "" {
		t.Errorf("pause-requested unset, want it set so the pause is now whatever woke it")
	}

	mustSucceed(t, run(t, adminKubeconfig, nil, "wake", "api", "-n", ns, "--until", "18:00"))
	a = get()
	keep, err := time.Parse(time.RFC3339, a[napwakev1alpha1.AnnotationKeepAwakeUntil])
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	if err != nil || keep.In(kolkata).Format("15:04") != "18:00" || keep.Before(time.Now()) || time.Until(keep) > 24*time.Hour {
		t.Errorf("keep-awake-until %q, want the next 18:00 in Asia/Kolkata", a[napwakev1alpha1.AnnotationKeepAwakeUntil])
	}
	if _, ok := a[napwakev1alpha1.AnnotationPauseUntil]; ok {
		t.Errorf("pause-until is left, want it removed")
	}

	r := run(t, adminKubeconfig, nil, "wake", "api", "-n", ns, "--until", "tonight")
	if r.err == nil || !strings.Contains(r.err.Error(), `--until "tonight" is neither a duration`) {
		t.Errorf("error %v for --until tonight, want one naming the forms", r.err)
	}
	// Whether an RFC 3339 time is past takes the cluster's clock: found
	// after asking it, so a failure (1), not a usage error (2).
	r = run(t, adminKubeconfig, nil, "wake", "api", "-n", ns, "--until", "2020-01-01T00:00:00Z")
	assertOneLine(t, r, `--until "2020-01-01T00:00:00Z" is not in the future (the cluster's time is `)
	if code := ExitCode(r.err); code != ExitFailed {
		t.Errorf("exit code %d for an --until in the past, want %d", code, ExitFailed)
	}
}

// FuzzCheckUntil: what checkUntil lets through before connecting must never
// be refused after, at any moment in any zone, but for an RFC 3339 time,
// whose range takes the cluster's clock; and every refusal is a usage error.
func FuzzCheckUntil(f *testing.F) {
	for _, s := range []string{"2h", "18:00", "9:15", "24:00", "2026-10-24T08:00:00+02:00", "", "-1h", "744h", "745h", "1:1", "T", " 07:30 "} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC) // the night Berlin skips 02:00-03:00
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		err := checkUntil(v)
		if err != nil {
			if ExitCode(err) != ExitUsage {
				t.Fatalf("checkUntil(%q) = %v, not a usage error", v, err)
			}
			return
		}
		if strings.Contains(v, "T") {
			return
		}
		if _, err := parseUntil(v, now, berlin); err != nil {
			t.Fatalf("checkUntil(%q) passed but parseUntil refused it after connecting: %v", v, err)
		}
	})
}
