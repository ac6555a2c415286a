package page

import (
	"html"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// AsleepRefreshSeconds is how often the asleep page reloads: a minute, so
// its button's token (good for 10 minutes) stays fresh, and a tab left open
// goes on to the app once someone has woken it.
const AsleepRefreshSeconds = 60

// NotReadyRefreshSeconds is how often the asleep page reloads while it
// has no button to offer (NoticeNotReady): the doorman pod has just
// started and not read the wake key yet, which takes a second or two.
const NotReadyRefreshSeconds = 5

// TokenField is the button's form field; package ask reads it by the same
// name.
const TokenField = "napwake-token"

// asleepStyle is the asleep page's only style: the waking-up page's look,
// a resting dot, the notice and the button.
const asleepStyle = `body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;font:16px/1.5 system-ui,sans-serif;background:#f6f7f9;color:#1d2330}` +
	`main{max-width:36rem;padding:2rem;text-align:center}h1{font-size:1.4rem;margin:.5rem 0}p{color:#555}` +
	`.addr,code{font-family:ui-monospace,monospace;word-break:break-all}.addr{color:#3a4a6b}` +
	`i{display:inline-block;width:.8rem;height:.8rem;border-radius:50%;background:#8a94a6}` +
	`.note{color:#8a3b12;background:#fdf0e6;border-radius:.5rem;padding:.6rem .9rem}` +
	`button{font:inherit;font-weight:600;margin:.5rem 0 1rem;padding:.6rem 1.6rem;border:0;border-radius:.5rem;background:#2f5bd3;color:#fff;cursor:pointer}button:disabled{background:#8a94a6}`

// asleepScript is the page's only script. It marks the button as pressed
// so a second press does not post again (and get the 429), and undoes that
// when the browser shows the page again from its history. It never
// submits the form: only a person's press does
// (docs/design/ask.md#telling-a-click-from-a-robot).
const asleepScript = `var b=document.querySelector("button");b.form.onsubmit=function(){b.disabled=true;b.textContent="Waking\u2026"};onpageshow=function(){b.disabled=false;b.textContent="Wake it"}`

// AsleepCSP is the asleep page's Content-Security-Policy: its own style and
// script, by hash, images only from data:, the form posting only back to
// the page's own origin, no frames, no base changes.
//
// form-action is 'self', the page's scheme, host and port, not its path: the
// form posts to the page's own address (it has no action), and behind an
// ingress that strips a path prefix or a proxy that rewrites Host the
// doorman does not know the address the browser shows, so a path or host
// written here could refuse the very post it is for.
var AsleepCSP = "default-src 'none'; style-src 'sha256-" + hashOf(asleepStyle) + "'; script-src 'sha256-" + hashOf(asleepScript) +
	"'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// Notice is what the asleep page says after a click that woke nothing.
type Notice int

const (
	// NoticeNone: a page load, or another form's post: 200.
	NoticeNone Notice = iota
	// NoticeExpired: the button had run out (or was for an earlier pause): 403.
	NoticeExpired
	// NoticeOtherAddress: the click came from another address: 403.
	NoticeOtherAddress
	// NoticeOldBrowser: the browser did not say the click came from the
	// page: 403.
	NoticeOldBrowser
	// NoticeTooSoon: a click within a minute of the last wake request:
	// 429, Retry-After: 60.
	NoticeTooSoon
	// NoticeTryAgain: a good click the cluster did not answer (the API
	// server was away): 503, Retry-After: 5, with a fresh button.
	NoticeTryAgain
	// NoticeNotReady: this doorman pod has no wake key yet, so it offers
	// no button, and a click it could not check woke nothing: 503,
	// Retry-After: 5; the page reloads every NotReadyRefreshSeconds.
	NoticeNotReady
)

const wakeCmd = "<code>kubectl napwake wake</code>"

// notices holds, for each Notice, the response head up to Content-Length
// and the words shown above the button.
var notices = [...]struct{ head, text string }{
	NoticeNone: {asleepHead("200 OK", ""), ""},
	NoticeExpired: {asleepHead("403 Forbidden", ""),
		"Nothing woke: this page was open too long, and its button had run out. Press <b>Wake it</b> again."},
	NoticeOtherAddress: {asleepHead("403 Forbidden", ""),
		"Nothing woke: the click came from another address. Press <b>Wake it</b> here, or someone with access to the cluster can wake it with " + wakeCmd + "."},
	NoticeOldBrowser: {asleepHead("403 Forbidden", ""),
		"Nothing woke: this browser doesn’t say the click came from this page. Use a current browser, or someone with access to the cluster can wake it with " + wakeCmd + "."},
	NoticeTooSoon: {asleepHead("429 Too Many Requests", "Retry-After: 60\r\n"),
		"Someone asked for it to wake less than a minute ago. Try again in a minute."},
	NoticeTryAgain: {asleepHead("503 Service Unavailable", "Retry-After: 5\r\n"),
		"Nothing woke yet: the cluster did not answer. Press <b>Wake it</b> again in a moment."},
	NoticeNotReady: {asleepHead("503 Service Unavailable", "Retry-After: "+strconv.Itoa(NotReadyRefreshSeconds)+"\r\n"),
		"It can’t be woken from this page for a few seconds more. This page reloads by itself, then offers <b>Wake it</b>."},
}

func asleepHead(status, extra string) string {
	return "HTTP/1.1 " + status + "\r\n" +
		"Content-Type: text/html; charset=utf-8\r\n" +
		"Cache-Control: no-store\r\n" + extra +
		"X-Robots-Tag: noindex\r\n" +
		"Referrer-Policy: same-origin\r\n" +
		"X-Frame-Options: DENY\r\n" +
		"Content-Security-Policy: " + AsleepCSP + "\r\n" +
		"X-Content-Type-Options: nosniff\r\n" +
		"Content-Length: "
}

// The page's fixed parts, around the reload time, the address, the notice
// and the token.
const (
	asleepRefresh = `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
		`<meta http-equiv="refresh" content="`
	asleepTop = `"><meta name="robots" content="noindex"><meta name="viewport" content="width=device-width,initial-scale=1">` +
		`<title>Asleep</title><link rel="icon" href="` + icon + `"><style>` + asleepStyle + `</style></head>` +
		`<body><main><i></i><h1>This environment is asleep</h1><p class="addr">`
	asleepNote = `<p class="note">`
	asleepForm = `<p>It starts when someone asks for it, which takes a moment.</p>` +
		`<form method="post"><input type="hidden" name="` + TokenField + `" value="`
	asleepEnd = `"><button type="submit">Wake it</button></form>` +
		`<p>This page reloads every minute, and opens the app once it is awake.</p>` +
		`</main><script>` + asleepScript + `</script></body></html>`
	// Without a button (Until, NoticeNotReady) the page has no script.
	asleepUntil = `<p>It stays asleep until <b>`
	asleepSoon  = `</b>. Someone with access to the cluster can wake it sooner with ` + wakeCmd + `.</p>` +
		`<p>This page reloads every minute, and opens the app once it is awake.</p></main></body></html>`
	asleepBare = `</main></body></html>`
)

// untilLayout is how the page shows a pause-until's end.
const untilLayout = "Mon 2 Jan 2006, 15:04 MST"

// AsleepPage describes one asleep page: the answer to a person's browser
// opening a page of a paused workload that asks before waking, and to the
// clicks that woke nothing.
type AsleepPage struct {
	// Host and Path are the address the person opened, shown escaped.
	Host, Path string
	// Token is the button's fresh token (ask.Issue).
	Token string
	// Notice says why a click woke nothing; NoticeNone for a page load.
	Notice Notice
	// Until, when set, is the end of the napwake.dev/pause-until that
	// holds the workload asleep: nothing a browser does can wake it, so the
	// page says until when, offers no button and has no notice (200).
	Until time.Time
}

// Render returns the complete response: 200, or 403, 429 or 503 with a
// notice, and Connection: close. The page's form has no action, so it
// posts back to the address the browser shows, a path prefix included; it
// names no namespace, workload or Service. Without a token there is no
// button: the page says so (NoticeNotReady) and reloads every
// NotReadyRefreshSeconds; with Until it says until when it sleeps.
func (a AsleepPage) Render() []byte {
	notice, refresh := a.Notice, AsleepRefreshSeconds
	switch {
	case !a.Until.IsZero():
		notice = NoticeNone
	case a.Token == "":
		notice, refresh = NoticeNotReady, NotReadyRefreshSeconds
	}
	n := notices[NoticeNone]
	if notice > NoticeNone && int(notice) < len(notices) {
		n = notices[notice]
	}
	host, path := a.Host, a.Path // shown as they are when they can be
	if len(host)+len(path) > maxShown || !plain(host) || !plain(path) {
		host, path = shownAddress(host, path), ""
	}
	parts := make([]string, 0, 10)
	parts = append(parts, asleepRefresh, strconv.Itoa(refresh), asleepTop, host, path, "</p>")
	if n.text != "" {
		parts = append(parts, asleepNote, n.text, "</p>")
	}
	switch {
	case !a.Until.IsZero():
		parts = append(parts, asleepUntil, a.Until.UTC().Format(untilLayout), asleepSoon)
	case a.Token == "":
		parts = append(parts, asleepBare)
	default:
		tok := a.Token // base64url, as ask.Issue makes it, needs no escaping
		if !plain(tok) {
			tok = html.EscapeString(tok)
		}
		parts = append(parts, asleepForm, tok, asleepEnd)
	}
	bodyLen := 0
	for _, p := range parts {
		bodyLen += len(p)
	}
	b := make([]byte, 0, len(n.head)+len("0000\r\nConnection: close\r\n\r\n")+bodyLen)
	b = append(b, n.head...)
	b = strconv.AppendInt(b, int64(bodyLen), 10)
	b = append(b, "\r\nConnection: close\r\n\r\n"...)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// shownAddress is host+path as the page shows it: at most maxShown bytes,
// valid UTF-8, control and bidirectional formatting characters replaced (so
// a Host cannot reorder or hide what is shown), HTML-escaped.
func shownAddress(host, path string) string {
	addr := host + path
	cut := len(addr) > maxShown
	if cut {
		addr = addr[:maxShown]
	}
	addr = strings.ToValidUTF8(addr, "\uFFFD")
	if strings.IndexFunc(addr, unsafeRune) >= 0 {
		addr = strings.Map(func(r rune) rune {
			if unsafeRune(r) {
				return utf8.RuneError
			}
			return r
		}, addr)
	}
	if cut {
		addr += "…"
	}
	return html.EscapeString(addr)
}

// plain reports whether s needs nothing done to be shown: printable ASCII
// other than the characters HTML escapes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '<' || c == '>' || c == '&' || c == '\'' || c == '"' {
			return false
		}
	}
	return true
}

// unsafeRune reports whether r is a control character or one that changes
// the direction of text (U+200E, U+200F, U+202A to U+202E, U+2066 to
// U+2069).
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || r == '\u200e' || r == '\u200f' ||
		(r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
}
