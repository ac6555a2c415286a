package ask

import (
	"strings"
	"time"

	"napwake.dev/doorman/internal/classify"
	"napwake.dev/doorman/internal/page"
	"napwake.dev/shared/onewake"
)

// Kind is the judgement of one request to a paused workload that asks.
type Kind int

const (
	// NeedMore: the form has not ended within the bytes given; read more,
	// up to MaxBodyBytes past the head, and judge again.
	NeedMore Kind = iota
	// PageLoad: a person's browser opening a page: the asleep page, 200.
	PageLoad
	// OtherForm: a browser posting a form that is not the button's: the
	// asleep page, 200, not counted as turned away.
	OtherForm
	// Wake: a fresh click from the page: stamp napwake.dev/last-request
	// (resourceVersion-guarded) and answer with the waking-up page.
	Wake
	// Expired: a click whose token has run out, is for an earlier pause, or
	// does not verify: the asleep page, 403, with a fresh button.
	Expired
	// OtherAddress: a click the browser says came from another address: the
	// asleep page, 403.
	OtherAddress
	// OldBrowser: a click from a browser that does not say it came from the
	// page (neither fetch metadata nor Origin, or no Sec-Fetch-User from a
	// browser that always sends it): the asleep page, 403.
	OldBrowser
	// TooSoon: a good click within onewake.ClickInterval of the last wake request:
	// the asleep page, 429, Retry-After: 60.
	TooSoon
	// Unavailable: anything else: 503, Retry-After: 300, a short body (JSON
	// when asked for), counted as turned away.
	Unavailable
)

var kindNames = [...]string{"NeedMore", "PageLoad", "OtherForm", "Wake", "Expired", "OtherAddress", "OldBrowser", "TooSoon", "Unavailable"}

// String names the kind.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(?)"
}

// Status is the HTTP status of the answer; 0 for NeedMore, 503 (the waking-up
// page's) for Wake.
func (k Kind) Status() int {
	switch k {
	case PageLoad, OtherForm:
		return 200
	case Expired, OtherAddress, OldBrowser:
		return 403
	case TooSoon:
		return 429
	case Wake, Unavailable:
		return 503
	}
	return 0
}

// Notice is what the asleep page says for k (ShowsPage kinds only).
func (k Kind) Notice() page.Notice {
	switch k {
	case Expired:
		return page.NoticeExpired
	case OtherAddress:
		return page.NoticeOtherAddress
	case OldBrowser:
		return page.NoticeOldBrowser
	case TooSoon:
		return page.NoticeTooSoon
	}
	return page.NoticeNone
}

// Wakes reports whether the request wakes the workload.
func (k Kind) Wakes() bool { return k == Wake }

// ShowsPage reports whether the answer is the asleep page with a fresh
// button (PageLoad, OtherForm, and the 403s and 429 with their notice).
func (k Kind) ShowsPage() bool { return k >= PageLoad && k <= TooSoon && k != Wake }

// TurnedAway reports whether the request counts as turned away ("What it
// turns away": the 503s, not a person shown the page).
func (k Kind) TurnedAway() bool { return k == Unavailable }

// Verdict is the judgement and what it rests on.
type Verdict struct {
	Kind Kind
	// Token is what the token check said, for a click that got that far.
	Token TokenVerdict
	// WantsJSON: an Unavailable answer's body is JSON.
	WantsJSON bool
	// Why names the rule that decided, for a debug log and tests.
	Why string
}

// Input is what the doorman knows when it judges a request to a paused
// workload that asks (classify said Asleep).
type Input struct {
	// Req is the request's head, as classify.ClassifyHead read it.
	Req *classify.Request
	// Body is what has been read past the head, up to MaxBodyBytes.
	Body []byte
	// Final says no more bytes will be read (the caller closed, went
	// silent, or MaxBodyBytes are in).
	Final bool
	// Workload is "namespace/name"; PausedAt its status.pause.startedAt.
	Workload string
	PausedAt time.Time
	// Ring holds the keys that verify.
	Ring *Ring
	// LastWakeRequest is the ManagedWorkload's napwake.dev/last-request,
	// as every doorman pod sees it; zero when unset or unreadable.
	LastWakeRequest time.Time
	Now             time.Time
}

// Judge decides what to do with one request, in this order (each step
// only when the ones before it let the request through):
//
//  1. A GET from a person's browser (classify.Request.Browser) is a page
//     load; any other GET, a HEAD or any other method but POST is
//     Unavailable.
//  2. A POST is Unavailable unless it comes from a person's browser
//     navigating (so crawlers, headless browsers, scripts and a browser's
//     fetch post nothing), its head ended within 16 KiB, and it is a
//     URL-encoded form (not a file upload) that ends within the bounds of
//     ReadForm; NeedMore while it may still end.
//  3. A form without the button's field is OtherForm.
//  4. The browser must say the click came from the page: with fetch
//     metadata, Sec-Fetch-Site: same-origin (else OtherAddress) and, from
//     a browser that always sends it, Sec-Fetch-User: ?1 (else OldBrowser);
//     without, an Origin that is the page's address (else OtherAddress; no
//     Origin either is OldBrowser).
//  5. The token must verify (else Expired).
//  6. Within onewake.ClickInterval of the last wake request it is TooSoon;
//     otherwise it is Wake.
//
// Judge never panics (in.Req must be set) and never returns Wake without a
// good token.
func Judge(in *Input) Verdict {
	r := in.Req
	switch r.Method {
	case "GET":
		if r.Browser() {
			return Verdict{Kind: PageLoad, Why: "a person's browser opening a page"}
		}
		return unavailable(r, "a GET that is not a person's browser opening a page")
	case "POST":
	default:
		return unavailable(r, "neither GET nor POST")
	}
	switch {
	case !r.Browser():
		return unavailable(r, "a POST that is not a person's browser navigating")
	case r.HeadLen == 0:
		return unavailable(r, "a POST whose head did not end within 16 KiB")
	case !urlEncoded(r.ContentType):
		return unavailable(r, "a POST that is not a URL-encoded form")
	}
	f := ReadForm(r, in.Body)
	switch {
	case f.Status == FormNeedMore && !in.Final:
		return Verdict{Kind: NeedMore, Why: "a form not ended yet"}
	case f.Status == FormNeedMore:
		return unavailable(r, "a form that never ended")
	case f.Status == FormTooLarge:
		return unavailable(r, "a larger form")
	case f.Status != FormRead:
		return unavailable(r, "a form whose framing cannot be read")
	case !f.HasToken:
		return Verdict{Kind: OtherForm, Why: "a form that is not the button's"}
	}
	if k, why := fromPage(r); k != Wake {
		return Verdict{Kind: k, Why: why}
	}
	tv := Verify(f.Token, in.Ring, in.Workload, in.PausedAt, in.Now)
	if tv != TokenGood {
		return Verdict{Kind: Expired, Token: tv, Why: "a click whose token is not good"}
	}
	if RecentWake(in.LastWakeRequest, in.Now) {
		return Verdict{Kind: TooSoon, Token: tv, Why: "a click within a minute of the last wake request"}
	}
	return Verdict{Kind: Wake, Token: tv, Why: "a fresh click from the page"}
}

// RecentWake reports whether a click at now comes too soon after the last
// wake request (onewake.ClickTooSoon). The doorman asks again when its
// guarded write of napwake.dev/last-request conflicts, with the time it
// then reads, so two pods clicking at once make one wake.
func RecentWake(last, now time.Time) bool { return onewake.ClickTooSoon(last, now) }

func unavailable(r *classify.Request, why string) Verdict {
	return Verdict{Kind: Unavailable, WantsJSON: r.WantsJSON(), Why: why}
}

// urlEncoded reports whether ct is application/x-www-form-urlencoded, with
// any parameters (a charset).
func urlEncoded(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded")
}
