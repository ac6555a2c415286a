package cli

import (
	"bytes"
	"testing"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

func TestLiveLineRewritesInPlaceOnATerminalAndPrintsChangesElsewhere(t *testing.T) {
	var term, logs bytes.Buffer
	for _, l := range []*liveLine{
		{w: &term, terminal: true, ref: "ns/api", want: napwakev1alpha1.PhaseRunning},
		{w: &logs, terminal: false, ref: "ns/api", want: napwakev1alpha1.PhaseRunning},
	} {
		l.show(napwakev1alpha1.PhasePaused, 0)
		l.show(napwakev1alpha1.PhasePaused, time.Second)
		l.show(napwakev1alpha1.PhaseResuming, 12340*time.Millisecond)
		l.end()
	}
	wantTerm := "\r\x1b[Kwaiting for ns/api to be Running: Paused, 0s" +
		"\r\x1b[Kwaiting for ns/api to be Running: Paused, 1s" +
		"\r\x1b[Kwaiting for ns/api to be Running: Resuming, 12s" +
		"\r\x1b[K"
	if term.String() != wantTerm {
		t.Errorf("terminal got %q\nwant %q", term.String(), wantTerm)
	}
	wantLogs := "waiting for ns/api to be Running: Paused, 0s\nwaiting for ns/api to be Running: Resuming, 12s\n"
	if logs.String() != wantLogs {
		t.Errorf("non-terminal got %q\nwant %q", logs.String(), wantLogs)
	}
}
