package render

import (
	"bytes"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// TestDescribeGoldenLastWakeWithStepsLeftOut shows a wake whose pod steps
// could not be told: the steps known, and why the others are not.
func TestDescribeGoldenLastWakeWithStepsLeftOut(t *testing.T) {
	mws, events := fleet()
	mw := mws[1]
	mw.Status.LastWake = &napwakev1alpha1.LastWakeStatus{StartedAt: at(-45 * time.Minute), Source: napwakev1alpha1.SourceRequest,
		TotalMilliseconds: 6200, Slowest: napwakev1alpha1.WakeStepRunning, Steps: []napwakev1alpha1.WakeStep{
			{Name: napwakev1alpha1.WakeStepWoken, Milliseconds: 0}, {Name: napwakev1alpha1.WakeStepScaled, Milliseconds: 50},
			{Name: napwakev1alpha1.WakeStepRunning, Milliseconds: 6150},
		},
		Advice: "the operator saw the Ready pod 6.2 s after it turned Ready",
		Note:   "scheduled: the Ready pod is older than the wake (a pause called off); started: the Ready pod is older than the wake\n(a pause called off)"}
	var b bytes.Buffer
	Describe(&b, &mw, events, Options{Now: now})
	golden(t, "describe-last-wake-partial", b.Bytes())
}

func TestLastWakeTotal(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    *napwakev1alpha1.LastWakeStatus
		want string
	}{
		{"no wake yet is a dash", nil, "-"},
		{"a wake under way says so", &napwakev1alpha1.LastWakeStatus{Source: "request", StartedAt: at(-time.Second)}, "under way"},
		{"a done wake is its total in seconds", &napwakev1alpha1.LastWakeStatus{Source: "request", TotalMilliseconds: 5349}, "5.3 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mw := &napwakev1alpha1.ManagedWorkload{Status: napwakev1alpha1.ManagedWorkloadStatus{LastWake: tc.w}}
			if got := LastWakeTotal(mw); got != tc.want {
				t.Errorf("LastWakeTotal = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDescribeSaysAWakeUnderWay(t *testing.T) {
	mws, _ := fleet()
	mw := mws[1]
	mw.Status.LastWake = &napwakev1alpha1.LastWakeStatus{StartedAt: at(-3 * time.Second), Source: napwakev1alpha1.SourceRequest}
	var b bytes.Buffer
	Describe(&b, &mw, nil, Options{Now: now})
	if want := "Last wake: woken by request at 2026-10-27T14:29:57Z (3s ago), under way\n"; !bytes.Contains(b.Bytes(), []byte(want)) {
		t.Errorf("describe says\n%s\nwant a line %q", b.String(), want)
	}
}
