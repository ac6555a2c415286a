package proxy

// The wake policy: what the doorman does with a connection, as pure
// functions of what it knows. Nothing here reads a socket, the clock, the
// Table or the Server: the connection (conn.go) gathers the facts, calls
// these, and acts on the answer. policy_test.go is their table.

import (
	"fmt"
	"slices"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/ask"
	"napwake.dev/doorman/internal/classify"
	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/shared/onewake"
)

// Action is what the doorman does next with a connection.
type Action int

const (
	// Classify: read the caller's first bytes (classify.Classify), then
	// decide again with what they say.
	Classify Action = iota + 1
	// Pass: a pod is Ready; pass the connection straight on, waking
	// nothing. If no passing place is free or no pod answers, decide
	// again with Facts.PassTried: it is classified and held like any
	// other.
	Pass
	// Hold: hold the connection until a pod is Ready, then pass it on with
	// the bytes read so far; Decision.Wake says whether it wakes.
	Hold
	// Answer: send the doorman's own answer (Decision.Reply) and close.
	Answer
	// Drop: close with nothing sent, waking nothing: the caller left.
	Drop
	// Judge: the workload asks before waking and this is HTTP: read the
	// request's form, if any, and judge it (ask.Judge), then decide again
	// with the verdict.
	Judge
	// Click: a fresh click on Wake it: stamp the wake under the
	// ManagedWorkload's resourceVersion guard (Hooks.Click), then decide
	// again with what came of it (Facts.Clicked).
	Click
)

var actionNames = [...]string{"Action(0)", "Classify", "Pass", "Hold", "Answer", "Drop", "Judge", "Click"}

// String names the action.
func (a Action) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "Action(?)"
}

// Reply is which of the doorman's own answers a connection gets (package
// page renders them).
type Reply int

const (
	// NoReply: closed with nothing sent (Ask mode, not HTTP).
	NoReply Reply = iota
	// ProbeReply: 503 and Connection: close, to a known probe or monitor.
	ProbeReply
	// HealthyReply: 200, to Google Cloud's load balancer health check.
	HealthyReply
	// NotFoundReply: 404, to a hidden file.
	NotFoundReply
	// AsleepReply: 503 with Retry-After: 300, the workload asks first.
	AsleepReply
	// WakingPage: the waking-up page, to a person's browser.
	WakingPage
	// AsleepPage: the asleep page with a fresh Wake it button, with the
	// notice the verdict gives (200, 403 or 429).
	AsleepPage
	// PausedReply: 503 saying until when pause-until holds it paused.
	PausedReply
	// PausedPage: the asleep page saying until when pause-until holds it
	// paused, with no button, to a person's browser (200).
	PausedPage
	// ClickFailedPage: the asleep page with a fresh button, saying the
	// click woke nothing as the cluster did not answer (503, Retry-After).
	ClickFailedPage
	// ClickTooSoonPage: the asleep page with a fresh button, saying
	// another wake request came within the minute (429): a click whose
	// stamp the guard refused.
	ClickTooSoonPage
)

// Clicked is what came of stamping a click's wake (Action Click).
type Clicked int

const (
	// NotClicked: no click was stamped for this connection (yet).
	NotClicked Clicked = iota
	// ClickWoke: the stamp took; the click woke the workload and the
	// sharers of its Service that wake on request.
	ClickWoke
	// ClickTooSoon: another wake request came within the minute, so the
	// guard refused the stamp.
	ClickTooSoon
	// ClickFailed: the API server did not take the stamp.
	ClickFailed
)

// Decision is the policy's answer for a connection at one stage.
type Decision struct {
	Action Action
	// Reply is what an Answer sends.
	Reply Reply
	// Wake: the connection wakes its workload and the paused workloads
	// sharing its Service (a Hold for as long as it is held, an Answer for
	// one retry's worth).
	Wake bool
	// TurnedAway: the connection counts as a request turned away in the
	// pause ("What it turns away").
	TurnedAway bool
}

// Facts are what a decision is made from.
type Facts struct {
	// Kind is the caller's classification: classify.NeedMore before any
	// byte was read, never NeedMore after.
	Kind classify.Kind
	// Left: the caller closed or reset before it was decided.
	Left bool
	// Ready: a pod of the Service is Ready now.
	Ready bool
	// Removed: the route went; its port lingers. A request held there wakes
	// its workload only if it is paused again, routed on another port
	// (waker.wakeable reads the routes as they are then).
	Removed bool
	// Phase is the route's own workload's status.phase.
	Phase string
	// Sent: the caller sent at least one byte.
	Sent bool
	// Verdict is ask.Judge's judgement of a request classify said Asleep;
	// ask.NeedMore before it is judged (Judge never gives it after).
	Verdict ask.Kind
	// WakeRequested: a click (or any wake request) was stamped in this
	// pause, within pauseWokenFor: the workload is waking though its phase
	// may not say so yet (wakeRequested).
	WakeRequested bool
	// PassTried: a pass straight on (Action Pass) found no passing place
	// or no pod that answered.
	PassTried bool
	// Clicked is what came of stamping this connection's click.
	Clicked Clicked
	// PausedUntil: the route's own workload is held paused by
	// napwake.dev/pause-until, which nothing the doorman does can lift.
	// The connection is classified and judged as for Ask: a browser gets
	// PausedPage, the rest of HTTP PausedReply.
	PausedUntil bool
}

// decide is the wake policy ("What wakes a workload, and what doesn't"):
//
//   - Before any byte is read, a connection with a Ready pod goes straight
//     there, except while its workload pauses: then only a request calls
//     the pause off, so a TCP check that connects and closes (such as the
//     operator's listening check) or a known probe must be told apart
//     first. Anything else is classified.
//   - A caller that left is never passed on and wakes nothing; it still
//     gets an answer it can read after a half-close.
//   - A request (classify.Hold) is held, and wakes its workload. Held
//     through a removed route's lingering port, it wakes the workload only
//     if it paused again meanwhile: the routes as they are then decide
//     (waker.wakeable), not the route the caller came through.
//   - Checkers get answers only while no pod is Ready: with one Ready (and
//     the route live) they are held, waking nothing, and passed on.
//   - Otherwise the doorman answers: the kind says what, whether it wakes
//     (a browser's waking-up page) and whether it counts as turned away.
//
// With wake.mode Ask (classify's Asleep and Refuse, "Asking before
// waking"):
//
//   - A connection that closes without sending a byte, as a TCP health
//     check or the operator's listening check does, is dropped and not
//     counted; one that is not HTTP is closed with nothing sent, counted as
//     turned away.
//   - HTTP is judged (ask.Judge), then answered by the verdict: a fresh
//     click is a Click that wakes (none on a removed route), the page's
//     other verdicts get the asleep page, not counted, and the rest the
//     503, counted as turned away. Once a wake was requested in this
//     pause, a page load gets the waking-up page ("once the workload is
//     waking, as with Request"), so the waking-up page's reload after a
//     click does not show the asleep page again; a click still gets 429.
//
// Under napwake.dev/pause-until (Facts.PausedUntil) only a wake-requested,
// which the doorman cannot write, wakes the workload: the connection is
// classified and HTTP judged as for Ask. A person's browser (any verdict
// but Unavailable) gets the asleep page saying until when, with no button
// (PausedPage), not counted: a person is never turned away. The rest of
// HTTP gets the 503 saying until when (PausedReply), counted as turned
// away; anything else is closed with nothing sent. Once a pod is Ready (a
// wake-requested woke it) a request is held and passed on as usual.
func decide(f Facts) Decision {
	live := !f.Removed
	pausing := live && f.Phase == string(napwakev1alpha1.PhasePausing)
	switch {
	case f.Kind == classify.NeedMore:
		if f.Ready && !pausing && !f.PassTried {
			return Decision{Action: Pass}
		}
		return Decision{Action: Classify}
	case !f.Kind.Answered() || (f.Ready && live):
		if f.Left {
			return Decision{Action: Drop}
		}
		return Decision{Action: Hold, Wake: !f.Kind.Answered()}
	case f.Kind == classify.Refuse && f.Left && !f.Sent:
		return Decision{Action: Drop}
	case f.Kind == classify.Asleep && f.PausedUntil:
		return decidePausedUntil(f.Verdict)
	case f.Kind == classify.Asleep:
		return decideAsk(f.Verdict, f.Clicked, live, f.WakeRequested)
	default:
		return Decision{Action: Answer, Reply: replyFor(f.Kind), Wake: live && f.Kind.Wakes(), TurnedAway: f.Kind.TurnedAway()}
	}
}

// decideAsk is the answer to a request to a workload that asks, by its
// verdict ("What browsers, robots and API clients see"); a fresh click is
// first stamped (Click), then answered by what came of it: the waking-up
// page when it woke the workload (it woke it itself: the answer wakes
// nothing more), the asleep page's 429 when another wake request came
// within the minute, and when the cluster did not answer, the asleep page
// saying so with a button to press again, not counted as turned away.
func decideAsk(v ask.Kind, clicked Clicked, live, wakeRequested bool) Decision {
	switch {
	case v == ask.NeedMore:
		return Decision{Action: Judge}
	case v == ask.PageLoad && wakeRequested:
		return Decision{Action: Answer, Reply: WakingPage}
	case v == ask.Wake && live:
		switch clicked {
		case ClickWoke:
			return Decision{Action: Answer, Reply: WakingPage}
		case ClickTooSoon:
			return Decision{Action: Answer, Reply: ClickTooSoonPage}
		case ClickFailed:
			return Decision{Action: Answer, Reply: ClickFailedPage}
		}
		return Decision{Action: Click}
	case v == ask.Wake:
		return Decision{Action: Answer, Reply: WakingPage}
	case v.ShowsPage():
		return Decision{Action: Answer, Reply: AsleepPage}
	default:
		return Decision{Action: Answer, Reply: AsleepReply, TurnedAway: true}
	}
}

// decidePausedUntil is the answer to HTTP while pause-until holds the
// workload paused, by its verdict: nothing wakes, and only what is not a
// person's browser is turned away.
func decidePausedUntil(v ask.Kind) Decision {
	switch v {
	case ask.NeedMore:
		return Decision{Action: Judge}
	case ask.Unavailable:
		return Decision{Action: Answer, Reply: PausedReply, TurnedAway: true}
	default:
		return Decision{Action: Answer, Reply: PausedPage}
	}
}

// replyFor is the answer to an answered kind.
func replyFor(k classify.Kind) Reply {
	switch k {
	case classify.Probe:
		return ProbeReply
	case classify.GoogleHC:
		return HealthyReply
	case classify.HiddenFile:
		return NotFoundReply
	case classify.Asleep:
		return AsleepReply
	case classify.Browser:
		return WakingPage
	default:
		return NoReply
	}
}

// Terms are the wake settings a connection is held under.
type Terms struct {
	// Ask: the connection is turned away instead of waking (wake.mode Ask,
	// and not already waking).
	Ask bool
	// Page: a browser gets the waking-up page (wake.page).
	Page bool
	// MaxWait is how long the connection is held for a Ready pod.
	MaxWait time.Duration
	// PausedUntil is the own workload's Workload.PausedUntil when the hold
	// began; zero when not in force.
	PausedUntil time.Time
}

// termsFor returns the terms of a connection to own's route, given the
// workloads sharing its Service (sharersOf): own's, and for a Service
// shared by paused workloads theirs. A request wakes those of them that
// wake on request (wakesOnRequest), never one that asks, so the
// connection asks only when every one of them asks: a paused workload
// that asks beside one that wakes on request leaves callers held for the
// other, and stays asleep itself until clicked. The connection gets the
// waking-up page only if every workload it wakes shows it, and waits the
// longest maxWait among them: a Ready pod of any of them serves it. When
// all ask, their settings count alike. A sharer that is Running is not
// waiting to be woken and has no say.
func termsFor(own Workload, sharers []Workload) Terms {
	behind := []Workload{own}
	for _, w := range sharers {
		if w.Phase != string(napwakev1alpha1.PhaseRunning) {
			behind = append(behind, w)
		}
	}
	woken := slices.DeleteFunc(slices.Clone(behind), asks)
	t := Terms{Ask: len(woken) == 0, Page: true}
	if t.Ask {
		woken = behind
	}
	for _, w := range woken {
		t.Page = t.Page && w.Page
		t.MaxWait = max(t.MaxWait, w.maxWait())
	}
	return t
}

// asks reports whether w turns a request away rather than waking: wake
// mode Ask, and not already waking.
func asks(w Workload) bool {
	return w.Ask && w.Phase != string(napwakev1alpha1.PhaseResuming)
}

// wakesOnRequest reports whether a request wakes w: it is Paused or
// Pausing and does not ask. One that asks wakes only by a click, which
// stamps it itself.
func wakesOnRequest(w Workload) bool {
	return paused(w) && !asks(w)
}

// maxWait is spec.wake.maxWait, apis' DefaultMaxWait when unset.
func (w Workload) maxWait() time.Duration {
	if w.MaxWait <= 0 {
		return napwakev1alpha1.DefaultMaxWait
	}
	return w.MaxWait
}

// sharersOf returns the workloads of the live routes among live (one
// Service port's) that share r's Service from another doorman port:
// "Services shared with other workloads".
func sharersOf(r Route, live []Route) []Workload {
	var out []Workload
	for _, o := range live {
		if o.DoormanPort == r.DoormanPort || o.Key() != r.Key() || o.Workload.Key() == r.Workload.Key() {
			continue
		}
		out = append(out, o.Workload)
	}
	return out
}

// wakeRequested reports whether w's last wake request (napwake.dev/
// last-request, as every doorman pod sees it) woke its current pause
// (onewake.Pause.Woken): it is waking, or about to be.
func wakeRequested(w Workload, now time.Time) bool {
	return onewake.Of(w.PausedAt).Woken(w.LastRequest, now)
}

// woken is when this doorman last woke a workload, and the pause it woke;
// inFlight while a caller's patch of it is under way.
type woken struct {
	at, pausedAt time.Time
	inFlight     bool
}

// wouldWake reports whether a wake at now would wake w (or call its pause
// off): it is Paused or Pausing, and this doorman has neither woken it
// within retry nor woken this pause of it within onewake.WakeStands. last
// is this doorman's last wake of w, if known.
func wouldWake(w Workload, last woken, known bool, now time.Time, retry time.Duration) bool {
	if !paused(w) {
		return false
	}
	if !known {
		return true
	}
	since := now.Sub(last.at)
	if since < retry {
		return false
	}
	return w.PausedAt.IsZero() || !w.PausedAt.Equal(last.pausedAt) || since >= onewake.WakeStands
}

// paused reports whether w is Paused or Pausing: a request would wake it,
// or call its pause off.
func paused(w Workload) bool {
	return w.Phase == string(napwakev1alpha1.PhasePaused) || w.Phase == string(napwakev1alpha1.PhasePausing)
}

// notServed is the wakes result and the reason a held connection given
// up on at maxWait counts as: dialErr is the last dial's failure, if the
// woken pods could not be reached; ready says a pod was Ready at the end
// (then every passing place was taken).
func notServed(dialErr error, ready bool) (result, why string) {
	switch {
	case dialErr != nil:
		return metrics.ResultFailed, fmt.Sprintf("the woken pods could not be reached: %v", dialErr)
	case ready:
		return metrics.ResultTimedOut, "every passing place was taken until maxWait"
	default:
		return metrics.ResultTimedOut, "no pod was Ready within maxWait"
	}
}
