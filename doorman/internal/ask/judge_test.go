package ask

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"napwake.dev/doorman/internal/classify"
	"napwake.dev/doorman/internal/page"
)

const host = "pr-412.preview.example.dev"

const (
	chrome    = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"
	firefox   = "Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0"
	firefox85 = "Mozilla/5.0 (X11; Linux x86_64; rv:85.0) Gecko/20100101 Firefox/85.0"
	firefox60 = "Mozilla/5.0 (Windows NT 6.1; rv:60.0) Gecko/20100101 Firefox/60.0"
	safari    = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Safari/605.1.15"
	iosChrome = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/130.0.6723.90 Mobile/15E148 Safari/604.1"
	googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	bingbot   = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
	fbhit     = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"
	headless  = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/130.0.0.0 Safari/537.36"
)

func ua(s string) string { return "User-Agent: " + s + "\r\n" }

const (
	html     = "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
	navigate = "Sec-Fetch-Mode: navigate\r\nSec-Fetch-Dest: document\r\n"
	same     = "Sec-Fetch-Site: same-origin\r\n"
	user     = "Sec-Fetch-User: ?1\r\n"
	httpsO   = "Origin: https://" + host + "\r\n"
	httpO    = "Origin: http://" + host + "\r\n"
)

// The ways a browser says the click came from the page.
var (
	chromeHTTPS  = ua(chrome) + html + same + navigate + user + httpsO
	firefoxHTTPS = ua(firefox) + html + same + navigate + user + httpsO
	safariHTTPS  = ua(safari) + html + same + navigate + httpsO
	chromeHTTP   = ua(chrome) + html + httpO
	safariHTTP   = ua(safari) + html + httpO
	firefox85TLS = ua(firefox85) + html + httpsO
)

func get(hdrs ...string) string {
	return "GET /pr/42?tab=1 HTTP/1.1\r\nHost: " + host + "\r\n" + strings.Join(hdrs, "") + "\r\n"
}

func postForm(body string, hdrs ...string) string {
	return "POST /pr/42?tab=1 HTTP/1.1\r\nHost: " + host + "\r\n" + strings.Join(hdrs, "") +
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

func click(tok string, hdrs ...string) string { return postForm(page.TokenField+"="+tok, hdrs...) }

// headOf is the head ClassifyHead reads of b, as the doorman has it when it
// judges; ok says b is an HTTP/1 request.
func headOf(b []byte) (classify.Request, bool) {
	_, r := classify.ClassifyHead(b, true, classify.Options{Page: true, Ask: true})
	return r, r.Method != ""
}

// judge judges raw at t0 for the workload paused at pausedA, with ring.
func judge(t testing.TB, raw string, ring *Ring, final bool, last time.Time) Verdict {
	t.Helper()
	r, ok := headOf([]byte(raw))
	if !ok {
		t.Fatalf("not a request: %q", raw)
	}
	return Judge(&Input{Req: &r, Body: []byte(raw[r.HeadLen:]), Final: final, Workload: workload,
		PausedAt: pausedA, Ring: ring, LastWakeRequest: last, Now: t0})
}

func TestWhatBrowsersRobotsAndAPIClientsSee(t *testing.T) {
	k, ring, _ := fixture(t)
	good := Issue(k, workload, pausedA, t0.Add(-time.Minute))
	expired := Issue(k, workload, pausedA, t0.Add(-TokenLife))
	earlier := Issue(k, workload, pausedA.Add(-24*time.Hour), t0.Add(-time.Minute))
	rotatedOut := Issue(testKey(t, 2), workload, pausedA, t0.Add(-time.Minute))
	otherWorkload := Issue(k, "previews/pr-413", pausedA, t0.Add(-time.Minute))
	never := time.Time{}
	cases := []struct {
		name  string
		raw   string
		final bool
		last  time.Time
		want  Kind
		json  bool
	}{
		// A person's browser opening a page.
		{"a person's browser opening a page gets the asleep page", get(ua(chrome), html, navigate, "Sec-Fetch-Site: none\r\n", user), false, never, PageLoad, false},
		{"a browser opening a page over plain HTTP, asking for HTML, gets the asleep page", get(ua(safari), html), false, never, PageLoad, false},
		{"a browser following a link from another site gets the asleep page", get(ua(firefox), html, navigate, "Sec-Fetch-Site: cross-site\r\n"), false, never, PageLoad, false},
		{"a page load never wakes, even with a token in its query", strings.Replace(get(ua(chrome), html, navigate), "?tab=1", "?napwake-token="+good, 1), false, never, PageLoad, false},
		// A click on Wake it, from a browser that says it came from the page.
		{"a click from Chrome over HTTPS wakes it", click(good, chromeHTTPS), false, never, Wake, false},
		{"a click from Firefox over HTTPS wakes it", click(good, firefoxHTTPS), false, never, Wake, false},
		{"a click from Safari over HTTPS, which sends no Sec-Fetch-User, wakes it", click(good, safariHTTPS), false, never, Wake, false},
		{"a click from Chrome on iOS, which sends no Sec-Fetch-User, wakes it", click(good, ua(iosChrome), html, same, navigate, httpsO), false, never, Wake, false},
		{"a click over plain HTTP with the page's Origin wakes it", click(good, chromeHTTP), false, never, Wake, false},
		{"a click from Firefox 85 over HTTPS, with Origin and no fetch metadata, wakes it", click(good, firefox85TLS), false, never, Wake, false},
		{"a click behind a proxy that rewrites Host over HTTPS wakes it, as Sec-Fetch-Site says", click(good, ua(chrome), html, same, navigate, user, "Origin: https://public.example.com\r\n"), false, never, Wake, false},
		{"a click on a page with a port, over plain HTTP, wakes it", strings.Replace(click(good, ua(chrome), html, "Origin: http://"+host+":8080\r\n"), "Host: "+host, "Host: "+host+":8080", 1), false, never, Wake, false},
		{"a click whose form came on chunked by a proxy wakes it", chunkedClick(good, chromeHTTPS), false, never, Wake, false},
		{"a click from a page left open 9 minutes wakes it", click(Issue(k, workload, pausedA, t0.Add(-9*time.Minute)), chromeHTTPS), false, never, Wake, false},
		// A click whose button has run out.
		{"a click whose token has run out gets the expired page", click(expired, chromeHTTPS), false, never, Expired, false},
		{"a click with a token from an earlier pause gets the expired page", click(earlier, chromeHTTPS), false, never, Expired, false},
		{"a click with a token of a key no longer accepted gets the expired page", click(rotatedOut, chromeHTTPS), false, never, Expired, false},
		{"a click with another workload's token gets the expired page", click(otherWorkload, chromeHTTPS), false, never, Expired, false},
		{"a click with a garbled token gets the expired page", click("%3Cscript%3E", chromeHTTPS), false, never, Expired, false},
		{"a click with the token twice gets the expired page", postForm(page.TokenField+"="+good+"&"+page.TokenField+"="+good, chromeHTTPS), false, never, Expired, false},
		// A click the browser says came from a page at another address.
		{"a click from another site gets the other-address page", click(good, ua(chrome), html, "Sec-Fetch-Site: cross-site\r\n", navigate, user), false, never, OtherAddress, false},
		{"a click from another subdomain gets the other-address page", click(good, ua(chrome), html, "Sec-Fetch-Site: same-site\r\n", navigate, user), false, never, OtherAddress, false},
		{"a post the browser says no page started gets the other-address page", click(good, ua(chrome), html, "Sec-Fetch-Site: none\r\n", navigate, user), false, never, OtherAddress, false},
		{"a click over plain HTTP from another port gets the other-address page", click(good, ua(chrome), html, "Origin: http://"+host+":8080\r\n"), false, never, OtherAddress, false},
		{"a click over plain HTTP from another subdomain gets the other-address page", click(good, ua(chrome), html, "Origin: http://evil."+host+"\r\n"), false, never, OtherAddress, false},
		{"a click over plain HTTP behind a proxy that rewrites Host gets the other-address page", click(good, ua(chrome), html, "Origin: http://public.example.com\r\n"), false, never, OtherAddress, false},
		{"a click with Origin null gets the other-address page", click(good, ua(chrome), html, "Origin: null\r\n"), false, never, OtherAddress, false},
		{"a click with an Origin of another scheme gets the other-address page", click(good, ua(chrome), html, "Origin: ftp://"+host+"\r\n"), false, never, OtherAddress, false},
		// A click within a minute of the last wake request.
		{"a click within a minute of the last wake request gets 429", click(good, chromeHTTPS), false, t0.Add(-59 * time.Second), TooSoon, false},
		{"a click a minute after the last wake request wakes it", click(good, chromeHTTPS), false, t0.Add(-time.Minute), Wake, false},
		{"a click just after another pod's wake request, by a clock a little ahead, gets 429", click(good, chromeHTTPS), false, t0.Add(30 * time.Second), TooSoon, false},
		{"a last wake request more than a minute in the future is ignored", click(good, chromeHTTPS), false, t0.Add(2 * time.Minute), Wake, false},
		// A click from a browser that doesn't say it came from the page.
		{"a click with neither fetch metadata nor Origin gets the old-browser page", click(good, ua(firefox60), html), false, never, OldBrowser, false},
		{"a Chrome click without Sec-Fetch-User, as a script submitting the form, gets the old-browser page", click(good, ua(chrome), html, same, navigate, httpsO), false, never, OldBrowser, false},
		{"a Firefox click without Sec-Fetch-User gets the old-browser page", click(good, ua(firefox), html, same, navigate, httpsO), false, never, OldBrowser, false},
		// A browser posting a form that isn't the button's.
		{"a browser posting the app's login form gets the page as 200", postForm("user=ana&password=x", chromeHTTPS), false, never, OtherForm, false},
		{"a browser posting another form from another site gets the page as 200", postForm("q=1", ua(chrome), html, "Sec-Fetch-Site: cross-site\r\n", navigate, user), false, never, OtherForm, false},
		{"a browser posting an empty form gets the page as 200", postForm("", chromeHTTP), false, never, OtherForm, false},
		{"a browser's other form sent on chunked by a proxy gets the page as 200", strings.Replace(chunkedClick(good, chromeHTTPS), page.TokenField, "napwake-tokex", 1), false, never, OtherForm, false},
		// Anything else.
		{"curl gets 503", get(ua("curl/8.5.0"), "Accept: */*\r\n"), false, never, Unavailable, false},
		{"an API client asking for JSON gets 503 in JSON", get(ua("python-requests/2.32"), "Accept: application/json\r\n"), false, never, Unavailable, true},
		{"curl posting a fresh token wakes nothing", click(good, ua("curl/8.5.0"), html, httpO), false, never, Unavailable, false},
		{"a browser's User-Agent on curl without Accept gets 503", get(ua(chrome)), false, never, Unavailable, false},
		{"Googlebot gets 503", get(ua(googlebot), html), false, never, Unavailable, false},
		{"Googlebot posting a fresh token wakes nothing", click(good, ua(googlebot), html, same, navigate, user, httpsO), false, never, Unavailable, false},
		{"bingbot posting a fresh token wakes nothing", click(good, ua(bingbot), html, httpO), false, never, Unavailable, false},
		{"facebookexternalhit gets 503", get(ua(fbhit), html), false, never, Unavailable, false},
		{"a headless browser posting a fresh token wakes nothing", click(good, ua(headless), html, same, navigate, user, httpsO), false, never, Unavailable, false},
		{"a HEAD from a browser gets 503", strings.Replace(get(ua(chrome), html, navigate), "GET", "HEAD", 1), false, never, Unavailable, false},
		{"a WebSocket from a browser gets 503", get(ua(chrome), html, "Upgrade: websocket\r\nConnection: Upgrade\r\n"), false, never, Unavailable, false},
		{"a browser's fetch posting a fresh token wakes nothing", click(good, ua(chrome), "Accept: */*\r\n", same, "Sec-Fetch-Mode: cors\r\n", httpsO), false, never, Unavailable, false},
		{"a browser's fetch over plain HTTP posting a fresh token wakes nothing", click(good, ua(chrome), "Accept: */*\r\n", httpO), false, never, Unavailable, false},
		{"a larger form gets 503", postForm(page.TokenField+"="+good+"&pad="+strings.Repeat("p", MaxFormBytes), chromeHTTPS), false, never, Unavailable, false},
		{"a file upload gets 503", strings.Replace(click(good, chromeHTTPS), "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", 1), false, never, Unavailable, false},
		{"a JSON post gets 503", strings.Replace(click(good, chromeHTTPS), "application/x-www-form-urlencoded", "application/json", 1), false, never, Unavailable, false},
		{"a PUT gets 503", strings.Replace(click(good, chromeHTTPS), "POST", "PUT", 1), false, never, Unavailable, false},
		{"a chunked form that never ends gets 503", strings.TrimSuffix(chunkedClick(good, chromeHTTPS), "0\r\n\r\n"), true, never, Unavailable, false},
		{"a post with Content-Length and chunked both gets 503", strings.Replace(chunkedClick(good, chromeHTTPS), "Transfer-Encoding", "Content-Length: 5\r\nTransfer-Encoding", 1), false, never, Unavailable, false},
		{"a post whose head does not end within 16 KiB gets 503", strings.Replace(click(good, chromeHTTPS), "Content-Type", "Cookie: "+strings.Repeat("c", classify.MaxHeaderBytes)+"\r\nContent-Type", 1), false, never, Unavailable, false},
		// Not read yet.
		{"a form not all read yet needs more", click(good, chromeHTTPS)[:len(click(good, chromeHTTPS))-10], false, never, NeedMore, false},
		{"a chunked form not ended yet needs more", strings.TrimSuffix(chunkedClick(good, chromeHTTPS), "0\r\n\r\n"), false, never, NeedMore, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(t, tc.raw, ring, tc.final, tc.last)
			if v.Kind != tc.want || v.WantsJSON != tc.json {
				t.Fatalf("Judge = %v (%s), json %v; want %v, json %v", v.Kind, v.Why, v.WantsJSON, tc.want, tc.json)
			}
		})
	}
}

func chunkedClick(tok string, hdrs ...string) string {
	body := page.TokenField + "=" + tok
	return "POST /pr/42 HTTP/1.1\r\nHost: " + host + "\r\n" + strings.Join(hdrs, "") +
		"Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strconv.FormatInt(int64(len(body)-10), 16) + "\r\n" + body[:len(body)-10] + "\r\n" +
		"a\r\n" + body[len(body)-10:] + "\r\n0\r\n\r\n"
}

func TestKinds(t *testing.T) {
	for k := NeedMore; k <= Unavailable; k++ {
		want := map[Kind]struct {
			status     int
			shows      bool
			notice     page.Notice
			turnedAway bool
		}{
			NeedMore:     {0, false, page.NoticeNone, false},
			PageLoad:     {200, true, page.NoticeNone, false},
			OtherForm:    {200, true, page.NoticeNone, false},
			Wake:         {503, false, page.NoticeNone, false},
			Expired:      {403, true, page.NoticeExpired, false},
			OtherAddress: {403, true, page.NoticeOtherAddress, false},
			OldBrowser:   {403, true, page.NoticeOldBrowser, false},
			TooSoon:      {429, true, page.NoticeTooSoon, false},
			Unavailable:  {503, false, page.NoticeNone, true},
		}[k]
		if k.Status() != want.status || k.ShowsPage() != want.shows || k.Notice() != want.notice ||
			k.TurnedAway() != want.turnedAway || k.Wakes() != (k == Wake) {
			t.Errorf("%v: status %d, shows page %v, notice %v, turned away %v, wakes %v", k,
				k.Status(), k.ShowsPage(), k.Notice(), k.TurnedAway(), k.Wakes())
		}
	}
}

func TestAThousandClicksInASecondFromOneSourceWakeOnce(t *testing.T) {
	_, ring, tok := fixture(t)
	raw := click(tok, chromeHTTPS)
	r, _ := headOf([]byte(raw))
	in := Input{Req: &r, Body: []byte(raw[r.HeadLen:]), Workload: workload, PausedAt: pausedA, Ring: ring}
	wakes := 0
	for i := range 1000 {
		in.Now = t0.Add(time.Duration(i) * time.Millisecond)
		switch v := Judge(&in); v.Kind {
		case Wake:
			wakes++
			in.LastWakeRequest = in.Now // the doorman stamps napwake.dev/last-request
		case TooSoon:
		default:
			t.Fatalf("click %d: %v (%s)", i, v.Kind, v.Why)
		}
	}
	if wakes != 1 {
		t.Fatalf("1,000 clicks in a second woke it %d times, want 1", wakes)
	}
}

func TestAClickEverySecondWakesOnceAMinute(t *testing.T) {
	_, ring, _ := fixture(t)
	var wakes []time.Duration
	var last time.Time
	for s := time.Duration(0); s < 3*time.Minute; s += time.Second {
		now := t0.Add(s)
		raw := click(Issue(ring.current, workload, pausedA, now), chromeHTTPS)
		r, _ := headOf([]byte(raw))
		if v := Judge(&Input{Req: &r, Body: []byte(raw[r.HeadLen:]), Workload: workload, PausedAt: pausedA, Ring: ring, LastWakeRequest: last, Now: now}); v.Kind == Wake {
			wakes = append(wakes, s)
			last = now
		}
	}
	if len(wakes) != 3 || wakes[0] != 0 || wakes[1] != time.Minute || wakes[2] != 2*time.Minute {
		t.Fatalf("a click every second for 3 minutes woke it at %v, want 0s, 1m, 2m", wakes)
	}
}
