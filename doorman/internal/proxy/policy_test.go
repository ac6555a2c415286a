package proxy

import (
	"errors"
	"slices"
	"testing"
	"time"

	"napwake.dev/doorman/internal/ask"
	"napwake.dev/doorman/internal/classify"
	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/shared/onewake"
)

func TestDecide(t *testing.T) {
	const paused, pausing = "Paused", "Pausing"
	cases := []struct {
		name string
		f    Facts
		want Decision
	}{
		{"a connection with a Ready pod goes straight there",
			Facts{Kind: classify.NeedMore, Ready: true, Phase: paused}, Decision{Action: Pass}},
		{"a connection whose pass straight on found no place or no pod answering is classified",
			Facts{Kind: classify.NeedMore, Ready: true, Phase: paused, PassTried: true}, Decision{Action: Classify}},
		{"with no pod Ready a connection is classified",
			Facts{Kind: classify.NeedMore, Phase: paused}, Decision{Action: Classify}},
		{"while its workload pauses a connection with a Ready pod is classified first",
			Facts{Kind: classify.NeedMore, Ready: true, Phase: pausing}, Decision{Action: Classify}},
		{"on a removed route a pausing workload's Ready pod is gone to straight",
			Facts{Kind: classify.NeedMore, Ready: true, Removed: true, Phase: pausing}, Decision{Action: Pass}},
		{"a request is held and wakes",
			Facts{Kind: classify.Hold, Phase: paused}, Decision{Action: Hold, Wake: true}},
		{"a request with a Ready pod is held and wakes, calling a pause off",
			Facts{Kind: classify.Hold, Ready: true, Phase: pausing}, Decision{Action: Hold, Wake: true}},
		{"a request on a removed route is held and wakes what the routes say then (its workload, if paused again)",
			Facts{Kind: classify.Hold, Removed: true, Phase: paused}, Decision{Action: Hold, Wake: true}},
		{"a request whose caller left is dropped",
			Facts{Kind: classify.Hold, Left: true, Phase: paused}, Decision{Action: Drop}},
		{"a known probe gets 503 while no pod is Ready",
			Facts{Kind: classify.Probe, Phase: paused}, Decision{Action: Answer, Reply: ProbeReply}},
		{"a known probe is held and passed on once a pod is Ready, waking nothing",
			Facts{Kind: classify.Probe, Ready: true, Phase: pausing}, Decision{Action: Hold}},
		{"a known probe on a removed route is answered even with a Ready pod",
			Facts{Kind: classify.Probe, Ready: true, Removed: true, Phase: paused}, Decision{Action: Answer, Reply: ProbeReply}},
		{"a checker that left while a pod is Ready is dropped",
			Facts{Kind: classify.Probe, Ready: true, Left: true, Phase: paused}, Decision{Action: Drop}},
		{"a checker that half-closed still gets its answer",
			Facts{Kind: classify.Probe, Left: true, Phase: paused}, Decision{Action: Answer, Reply: ProbeReply}},
		{"GoogleHC gets 200",
			Facts{Kind: classify.GoogleHC, Phase: paused}, Decision{Action: Answer, Reply: HealthyReply}},
		{"a hidden file gets 404 and counts as turned away",
			Facts{Kind: classify.HiddenFile, Phase: paused}, Decision{Action: Answer, Reply: NotFoundReply, TurnedAway: true}},
		{"a browser gets the waking-up page and wakes",
			Facts{Kind: classify.Browser, Phase: paused}, Decision{Action: Answer, Reply: WakingPage, Wake: true}},
		{"a browser on a removed route gets the page and wakes nothing",
			Facts{Kind: classify.Browser, Removed: true, Phase: paused}, Decision{Action: Answer, Reply: WakingPage}},
		// "Asking before waking", row by row.
		{"in Ask mode HTTP is judged first",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true}, Decision{Action: Judge}},
		{"in Ask mode a person's browser opening a page gets the asleep page, waking nothing and not counted",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.PageLoad}, Decision{Action: Answer, Reply: AsleepPage}},
		{"in Ask mode once a wake was requested in this pause a page load gets the waking-up page, waking nothing more",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.PageLoad, WakeRequested: true}, Decision{Action: Answer, Reply: WakingPage}},
		{"in Ask mode once a wake was requested a click within the minute still gets the asleep page's 429",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.TooSoon, WakeRequested: true}, Decision{Action: Answer, Reply: AsleepPage}},
		{"in Ask mode a fresh click from the page is stamped first",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.Wake}, Decision{Action: Click}},
		{"in Ask mode a fresh click while it pauses is stamped, calling the pause off",
			Facts{Kind: classify.Asleep, Phase: pausing, Sent: true, Verdict: ask.Wake}, Decision{Action: Click}},
		{"in Ask mode a click whose stamp took gets the waking-up page, which wakes nothing more",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.Wake, Clicked: ClickWoke}, Decision{Action: Answer, Reply: WakingPage}},
		{"in Ask mode a click whose stamp the minute's guard refused gets the asleep page's 429, not counted",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.Wake, Clicked: ClickTooSoon}, Decision{Action: Answer, Reply: ClickTooSoonPage}},
		{"in Ask mode a click the API server did not take gets the asleep page saying so, not counted",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.Wake, Clicked: ClickFailed}, Decision{Action: Answer, Reply: ClickFailedPage}},
		{"in Ask mode a click on a removed route gets the waking-up page and wakes nothing",
			Facts{Kind: classify.Asleep, Removed: true, Phase: paused, Sent: true, Verdict: ask.Wake}, Decision{Action: Answer, Reply: WakingPage}},
		{"in Ask mode a click whose button ran out gets the asleep page again, not counted",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.Expired}, Decision{Action: Answer, Reply: AsleepPage}},
		{"in Ask mode a click from another site, subdomain or port gets the asleep page again, not counted",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.OtherAddress}, Decision{Action: Answer, Reply: AsleepPage}},
		{"in Ask mode a click within a minute of the last wake request gets the asleep page again, not counted",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.TooSoon}, Decision{Action: Answer, Reply: AsleepPage}},
		{"in Ask mode a click from a browser that doesn't say it came from the page gets the asleep page again",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.OldBrowser}, Decision{Action: Answer, Reply: AsleepPage}},
		{"in Ask mode another form's post gets the asleep page, not counted",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.OtherForm}, Decision{Action: Answer, Reply: AsleepPage}},
		{"in Ask mode anything else gets the 503, counted as turned away",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, Verdict: ask.Unavailable}, Decision{Action: Answer, Reply: AsleepReply, TurnedAway: true}},
		// pause-until ("What a caller sees under pause-until", docs/schedules.md).
		{"under pause-until HTTP is judged first",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, PausedUntil: true}, Decision{Action: Judge}},
		{"under pause-until a browser gets the asleep page saying until when, waking nothing, not counted",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, PausedUntil: true, Verdict: ask.PageLoad}, Decision{Action: Answer, Reply: PausedPage}},
		{"under pause-until a click on an old button gets the same page, waking nothing, not counted",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, PausedUntil: true, Verdict: ask.Wake}, Decision{Action: Answer, Reply: PausedPage}},
		{"under pause-until the rest of HTTP gets the paused 503, waking nothing, counted as turned away",
			Facts{Kind: classify.Asleep, Phase: paused, Sent: true, PausedUntil: true, Verdict: ask.Unavailable}, Decision{Action: Answer, Reply: PausedReply, TurnedAway: true}},
		{"under pause-until a workload woken by wake-requested has its request held and passed on, waking nothing more",
			Facts{Kind: classify.Asleep, Ready: true, Phase: "Resuming", Sent: true, PausedUntil: true}, Decision{Action: Hold}},
		{"under pause-until anything but HTTP is closed with nothing sent, counted as turned away",
			Facts{Kind: classify.Refuse, Phase: paused, Sent: true, PausedUntil: true}, Decision{Action: Answer, Reply: NoReply, TurnedAway: true}},
		{"in Ask mode a request that half-closed is still judged and answered",
			Facts{Kind: classify.Asleep, Left: true, Phase: paused, Sent: true, Verdict: ask.Unavailable}, Decision{Action: Answer, Reply: AsleepReply, TurnedAway: true}},
		{"in Ask mode a request with a Ready pod is held and passed on, waking nothing",
			Facts{Kind: classify.Asleep, Ready: true, Phase: pausing, Sent: true}, Decision{Action: Hold}},
		{"in Ask mode a connection that isn't HTTP is closed with nothing sent, turned away",
			Facts{Kind: classify.Refuse, Phase: paused, Sent: true}, Decision{Action: Answer, Reply: NoReply, TurnedAway: true}},
		{"in Ask mode a connection silent for 3 seconds is closed with nothing sent, turned away",
			Facts{Kind: classify.Refuse, Phase: paused}, Decision{Action: Answer, Reply: NoReply, TurnedAway: true}},
		{"in Ask mode a TCP health check that connects and closes is dropped and not counted",
			Facts{Kind: classify.Refuse, Left: true, Phase: paused}, Decision{Action: Drop}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(tc.f); got != tc.want {
				t.Fatalf("decide(%+v) = %+v (%v), want %+v (%v)", tc.f, got, got.Action, tc.want, tc.want.Action)
			}
		})
	}
}

func TestAWakeRequestedInThisPauseMeansWaking(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	pausedAt := now.Add(-time.Hour)
	cases := []struct {
		name string
		last time.Time
		want bool
	}{
		{"no wake request: not waking", time.Time{}, false},
		{"a wake request a second ago in this pause: waking", now.Add(-time.Second), true},
		{"a wake request just before the pause began: not waking", pausedAt.Add(-time.Second), false},
		{"a wake request five minutes ago that nothing acted on: not waking", now.Add(-onewake.WokenFor), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Phase: "Paused", PausedAt: pausedAt, LastRequest: tc.last}
			if got := wakeRequested(w, now); got != tc.want {
				t.Fatalf("wakeRequested = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTermsFor(t *testing.T) {
	w := func(phase string, ask, page bool, maxWait time.Duration) Workload {
		return Workload{Namespace: "ns", Name: "w", Ask: ask, Page: page, MaxWait: maxWait, Phase: phase}
	}
	own := w("Paused", false, true, 5*time.Second)
	cases := []struct {
		name    string
		own     Workload
		sharers []Workload
		want    Terms
	}{
		{"a workload alone is held under its own terms", own, nil, Terms{Page: true, MaxWait: 5 * time.Second}},
		{"an unset maxWait is two minutes", w("Paused", false, true, 0), nil, Terms{Page: true, MaxWait: 2 * time.Minute}},
		{"a workload that asks turns callers away", w("Paused", true, true, time.Minute), nil, Terms{Ask: true, Page: true, MaxWait: time.Minute}},
		{"a workload that asks but is already resuming does not ask", w("Resuming", true, true, time.Minute), nil, Terms{Page: true, MaxWait: time.Minute}},
		{"the route's own workload has its say even while it runs", w("Running", true, false, time.Minute), nil, Terms{Ask: true, MaxWait: time.Minute}},
		{"a paused sharer that asks leaves the connection held, and has no say", own, []Workload{w("Paused", true, false, time.Hour)}, Terms{Page: true, MaxWait: 5 * time.Second}},
		{"the route's workload asks, a paused sharer does not: held under the sharer's terms", w("Paused", true, false, time.Hour), []Workload{w("Pausing", false, true, 10*time.Second)}, Terms{Page: true, MaxWait: 10 * time.Second}},
		{"every paused workload asks: the connection asks, under all their terms", w("Paused", true, true, time.Minute), []Workload{w("Paused", true, false, 0)}, Terms{Ask: true, MaxWait: 2 * time.Minute}},
		{"a sharer without the page takes it away", own, []Workload{w("Pausing", false, false, time.Second)}, Terms{MaxWait: 5 * time.Second}},
		{"the longest maxWait among them holds", own, []Workload{w("Paused", false, true, time.Minute), w("Paused", false, true, 10*time.Second)}, Terms{Page: true, MaxWait: time.Minute}},
		{"a Running sharer has no say", own, []Workload{w("Running", true, false, time.Hour)}, Terms{Page: true, MaxWait: 5 * time.Second}},
		{"a resuming sharer does not ask, but its page and maxWait count", own, []Workload{w("Resuming", true, false, time.Hour)}, Terms{MaxWait: time.Hour}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := termsFor(tc.own, tc.sharers); got != tc.want {
				t.Fatalf("termsFor = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSharersAreTheOtherWorkloadsRoutedForTheSameServicePort(t *testing.T) {
	route := func(port int, service, name string) Route {
		return Route{DoormanPort: port, Service: service, PortName: "http", Workload: Workload{Namespace: "ns", Name: name}}
	}
	r := route(1, "api", "api")
	live := []Route{
		r,
		route(2, "api", "api-canary"), // shares
		route(3, "api", "api"),        // the same workload on another port
		route(4, "web", "web"),        // another Service
		route(5, "api", "api-old"),    // shares
	}
	var got []string
	for _, w := range sharersOf(r, live) {
		got = append(got, w.Name)
	}
	if want := []string{"api-canary", "api-old"}; !slices.Equal(got, want) {
		t.Fatalf("sharers %q, want %q", got, want)
	}
}

func TestWouldWake(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	pausedAt := now.Add(-time.Hour)
	const retry = 2 * time.Second
	w := func(phase string, pausedAt time.Time) Workload {
		return Workload{Namespace: "ns", Name: "w", Phase: phase, PausedAt: pausedAt}
	}
	cases := []struct {
		name  string
		w     Workload
		last  *woken
		wakes bool
	}{
		{"a paused workload never woken here is woken", w("Paused", pausedAt), nil, true},
		{"a pausing workload is woken: the pause is called off", w("Pausing", pausedAt), nil, true},
		{"a running workload is not woken", w("Running", time.Time{}), nil, false},
		{"a resuming workload is not woken again", w("Resuming", pausedAt), nil, false},
		{"not again within the retry", w("Paused", time.Time{}), &woken{at: now.Add(-retry + time.Millisecond)}, false},
		{"a pause without a start time is woken again after the retry", w("Paused", time.Time{}), &woken{at: now.Add(-retry)}, true},
		{"the same pause is not woken again while its stamp stands", w("Paused", pausedAt), &woken{at: now.Add(-onewake.WakeStands + time.Second), pausedAt: pausedAt}, false},
		{"the same pause still Paused once its stamp stood its time contradicts it: woken again", w("Paused", pausedAt), &woken{at: now.Add(-onewake.WakeStands), pausedAt: pausedAt}, true},
		{"a new pause is woken after the retry", w("Paused", now.Add(-time.Minute)), &woken{at: now.Add(-time.Minute), pausedAt: pausedAt}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var last woken
			if tc.last != nil {
				last = *tc.last
			}
			if got := wouldWake(tc.w, last, tc.last != nil, now, retry); got != tc.wakes {
				t.Fatalf("wouldWake = %v, want %v", got, tc.wakes)
			}
		})
	}
}

func TestNotServed(t *testing.T) {
	cases := []struct {
		name        string
		dialErr     error
		ready       bool
		result, why string
	}{
		{"no pod Ready: timed out", nil, false, metrics.ResultTimedOut, "no pod was Ready within maxWait"},
		{"a pod Ready but no place: timed out", nil, true, metrics.ResultTimedOut, "every passing place was taken until maxWait"},
		{"pods that could not be reached: failed", errors.New("connection refused"), true, metrics.ResultFailed, "the woken pods could not be reached: connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			result, why := notServed(tc.dialErr, tc.ready)
			if result != tc.result || why != tc.why {
				t.Fatalf("notServed = %q %q, want %q %q", result, why, tc.result, tc.why)
			}
		})
	}
}
