package proxy

import (
	"bytes"
	"crypto/rand"
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"napwake.dev/doorman/internal/ask"
	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/doorman/internal/page"
)

// Raw-socket tests of a workload that asks ("What browsers, robots and API
// clients see"), for what a real browser cannot be made to send: each
// request is written as bytes and the answer read whole.

const (
	chromeUA  = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
	safariUA  = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"
	googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	askHost   = "pr-412.preview.example.dev"
)

// staticKeys is a wake key ring that never changes.
type staticKeys struct{ r *ask.Ring }

func (k staticKeys) Ring() *ask.Ring { return k.r }

func (staticKeys) Unknown() {}

// askPod is one doorman pod serving a paused workload that asks.
type askPod struct {
	*harness
	key ask.Key
}

func askWorkload() Workload {
	w := testWorkload()
	w.Ask = true
	w.PausedAt = time.Now().Add(-time.Hour).Truncate(time.Second)
	return w
}

// newAskPods starts n doorman pods sharing one wake key and one
// ManagedWorkload (its last wake request), as a click can reach any.
func newAskPods(t testing.TB, n int, w Workload) []askPod {
	t.Helper()
	key, err := ask.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ring := (&ask.Ring{}).Observe(ask.Keys{Current: key}, time.Now())
	store := &clickStore{}
	var pods []askPod
	for range n {
		cfg := testConfig()
		cfg.Keys = staticKeys{&ring}
		h := newHarnessRec(t, cfg, w, &recorder{lastClick: store})
		pods = append(pods, askPod{harness: h, key: key})
	}
	return pods
}

// token is a fresh token for the pod's workload and pause.
func (p askPod) token() string {
	return ask.Issue(p.key, p.route.Workload.Key(), p.route.Workload.PausedAt, time.Now())
}

// exchange sends raw and reads the whole answer.
func (p askPod) exchange(t testing.TB, raw string) string {
	t.Helper()
	c := p.dial()
	defer c.Close()
	if _, err := c.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	return string(readAll(t, c))
}

func pageLoad(host, ua string, extra ...string) string {
	return "GET /pulls/412?tab=files HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + ua +
		"\r\nAccept: text/html,application/xhtml+xml\r\n" + strings.Join(extra, "") + "\r\n"
}

// post is a form post to the page's address, with headers extra.
func post(form, ua string, extra ...string) string {
	return "POST /pulls/412?tab=files HTTP/1.1\r\nHost: " + askHost + "\r\nUser-Agent: " + ua +
		"\r\nAccept: text/html\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
		strconv.Itoa(len(form)) + "\r\n" + strings.Join(extra, "") + "\r\n" + form
}

func clickForm(tok string) string { return page.TokenField + "=" + url.QueryEscape(tok) }

var (
	overHTTPS = []string{"Sec-Fetch-Site: same-origin\r\n", "Sec-Fetch-Mode: navigate\r\n", "Sec-Fetch-User: ?1\r\n", "Sec-Fetch-Dest: document\r\n", "Origin: https://" + askHost + "\r\n"}
	overHTTP  = []string{"Origin: http://" + askHost + "\r\n"}
)

func status(resp string) string {
	line, _, _ := strings.Cut(resp, "\r\n")
	return line
}

func header(resp, name string) string {
	head, _, _ := strings.Cut(resp, "\r\n\r\n")
	for _, l := range strings.Split(head, "\r\n") {
		if n, v, ok := strings.Cut(l, ": "); ok && strings.EqualFold(n, name) {
			return v
		}
	}
	return ""
}

// wantAsleepPage checks an asleep page: its status, every header the spec
// names, the address, a fresh button, and words of the notice.
func wantAsleepPage(t *testing.T, p askPod, resp, wantStatus, words string) {
	t.Helper()
	if got := status(resp); got != wantStatus {
		t.Fatalf("status %q, want %q\n%s", got, wantStatus, resp)
	}
	for name, want := range map[string]string{
		"Cache-Control": "no-store", "X-Robots-Tag": "noindex", "Referrer-Policy": "same-origin",
		"X-Frame-Options": "DENY", "Content-Security-Policy": page.AsleepCSP, "Connection": "close",
	} {
		if got := header(resp, name); got != want {
			t.Fatalf("%s: %q, want %q", name, got, want)
		}
	}
	m := regexp.MustCompile(`name="` + page.TokenField + `" value="([^"]*)"`).FindStringSubmatch(resp)
	if m == nil {
		t.Fatalf("no button in %s", resp)
	}
	if v := ask.Verify(m[1], p.srv.ring(), p.route.Workload.Key(), p.route.Workload.PausedAt, time.Now()); v != ask.TokenGood {
		t.Fatalf("the page's button is %v, want a fresh token", v)
	}
	if !strings.Contains(resp, `<p class="addr">`+askHost+"/pulls/412</p>") {
		t.Fatalf("the page does not show the address opened:\n%s", resp)
	}
	if !strings.Contains(resp, words) {
		t.Fatalf("the page does not say %q:\n%s", words, resp)
	}
	_, body, _ := strings.Cut(resp, "\r\n\r\n")
	for _, secret := range []string{"preview-42", `api"`, ">api<", "Service"} {
		if strings.Contains(body, secret) {
			t.Fatalf("the page names %q:\n%s", secret, resp)
		}
	}
}

func TestAPageLoadGetsTheAsleepPageAndNeverWakes(t *testing.T) {
	p := newAskPods(t, 1, askWorkload())[0]
	resp := p.exchange(t, pageLoad(askHost, chromeUA, "Sec-Fetch-Mode: navigate\r\n", "Sec-Fetch-Site: none\r\n"))
	wantAsleepPage(t, p, resp, "HTTP/1.1 200 OK", "Wake it")
	if header(resp, "Retry-After") != "" {
		t.Fatalf("a page load's page has Retry-After")
	}
	assertNoWake(t, p, 0)
}

// assertNoWake checks that nothing woke and turned counts turned away.
func assertNoWake(t *testing.T, p askPod, turned int) {
	t.Helper()
	if turned > 0 {
		wait(t, "the count turned away", func() bool { _, n, _ := p.rec.counts(); return n >= turned })
	}
	if w, n, _ := p.rec.counts(); w != 0 || n != turned {
		t.Fatalf("%d wakes and %d turned away, want none and %d", w, n, turned)
	}
	if n := p.rec.lastClick.count(); n != 0 {
		t.Fatalf("%d clicks stamped, want none", n)
	}
}

func TestAFreshClickWakesAndGetsTheWakingUpPage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers []string
	}{
		{"over HTTPS, as fetch metadata says", overHTTPS},
		{"over plain HTTP, as the Origin says", overHTTP},
		{"from Safari over HTTPS, without Sec-Fetch-User", []string{"Sec-Fetch-Site: same-origin\r\n", "Sec-Fetch-Mode: navigate\r\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newAskPods(t, 1, askWorkload())[0]
			ua := chromeUA
			if strings.HasPrefix(tc.name, "from Safari") {
				ua = safariUA
			}
			resp := p.exchange(t, post(clickForm(p.token()), ua, tc.headers...))
			want := string(page.Waking{Host: askHost, Path: "/pulls/412"}.Render())
			if resp != want {
				t.Fatalf("got\n%s\nwant the waking-up page\n%s", resp, want)
			}
			if n := p.rec.lastClick.count(); n != 1 {
				t.Fatalf("%d clicks stamped, want 1", n)
			}
			if got := p.rec.lastClick.clicks[0]; got != "preview-42/api api 127.0.0.1" {
				t.Fatalf("stamped %q", got)
			}
			if w, n, _ := p.rec.counts(); w != 0 || n != 0 {
				t.Fatalf("%d more wakes, %d turned away", w, n)
			}
		})
	}
}

func TestClicksThatWakeNothingGetTheAsleepPageAgain(t *testing.T) {
	w := askWorkload()
	cases := []struct {
		name    string
		req     func(p askPod) string
		status  string
		words   string
		counted int
	}{
		{"a click from another site: 403", func(p askPod) string {
			return post(clickForm(p.token()), chromeUA, "Sec-Fetch-Site: cross-site\r\n", "Sec-Fetch-Mode: navigate\r\n", "Sec-Fetch-User: ?1\r\n")
		}, "HTTP/1.1 403 Forbidden", "the click came from another address", 0},
		{"a click with a forged Origin over plain HTTP: 403", func(p askPod) string {
			return post(clickForm(p.token()), chromeUA, "Origin: http://evil.example\r\n")
		}, "HTTP/1.1 403 Forbidden", "the click came from another address", 0},
		{"a click from another port: 403", func(p askPod) string {
			return post(clickForm(p.token()), chromeUA, "Origin: http://"+askHost+":8080\r\n")
		}, "HTTP/1.1 403 Forbidden", "the click came from another address", 0},
		{"a click with neither fetch metadata nor Origin: 403", func(p askPod) string {
			return post(clickForm(p.token()), chromeUA)
		}, "HTTP/1.1 403 Forbidden", "Use a current browser", 0},
		{"a click with a token from the previous pause: 403", func(p askPod) string {
			return post(clickForm(ask.Issue(p.key, w.Key(), w.PausedAt.Add(-24*time.Hour), time.Now())), chromeUA, overHTTPS...)
		}, "HTTP/1.1 403 Forbidden", "its button had run out", 0},
		{"a click whose token ran out: 403", func(p askPod) string {
			return post(clickForm(ask.Issue(p.key, w.Key(), w.PausedAt, time.Now().Add(-11*time.Minute))), chromeUA, overHTTPS...)
		}, "HTTP/1.1 403 Forbidden", "its button had run out", 0},
		{"a token of any encoding: 403", func(askPod) string {
			return post(page.TokenField+"=%00%ff%3Cb%3E"+strings.Repeat("A", 300), chromeUA, overHTTPS...)
		}, "HTTP/1.1 403 Forbidden", "its button had run out", 0},
		{"another form's post: 200, not counted", func(askPod) string {
			return post("user=ann&password=hunter2", chromeUA, overHTTPS...)
		}, "HTTP/1.1 200 OK", "Wake it", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newAskPods(t, 1, w)[0]
			wantAsleepPage(t, p, p.exchange(t, tc.req(p)), tc.status, tc.words)
			assertNoWake(t, p, tc.counted)
		})
	}
}

func TestAClickWithinAMinuteGets429WhicheverPodItReaches(t *testing.T) {
	pods := newAskPods(t, 2, askWorkload())
	first := pods[0].exchange(t, post(clickForm(pods[0].token()), chromeUA, overHTTPS...))
	if status(first) != "HTTP/1.1 503 Service Unavailable" || !strings.Contains(first, "waking up") {
		t.Fatalf("the first click got\n%s", first)
	}
	resp := pods[1].exchange(t, post(clickForm(pods[1].token()), chromeUA, overHTTPS...))
	wantAsleepPage(t, pods[1], resp, "HTTP/1.1 429 Too Many Requests", "Try again in a minute")
	if got := header(resp, "Retry-After"); got != "60" {
		t.Fatalf("Retry-After %q, want 60", got)
	}
	if n := pods[0].rec.lastClick.count(); n != 1 {
		t.Fatalf("%d clicks stamped across the pods, want 1", n)
	}
}

func TestAClickTheInformerAlreadyShowsTooSoonGets429WithoutWriting(t *testing.T) {
	w := askWorkload()
	w.LastRequest = time.Now().Add(-30 * time.Second)
	p := newAskPods(t, 1, w)[0]
	wantAsleepPage(t, p, p.exchange(t, post(clickForm(p.token()), chromeUA, overHTTPS...)), "HTTP/1.1 429 Too Many Requests", "Try again in a minute")
	assertNoWake(t, p, 0)
}

func TestEverythingElseGets503AndIsTurnedAway(t *testing.T) {
	w := askWorkload()
	never := "1\r\n" + strings.Repeat("a", 1) + "\r\n"
	cases := []struct {
		name, req string
		json      bool
	}{
		{"curl", "GET / HTTP/1.1\r\nHost: " + askHost + "\r\nUser-Agent: curl/8.9\r\nAccept: */*\r\n\r\n", false},
		{"an API client asking for JSON", "GET /v1/items HTTP/1.1\r\nHost: " + askHost + "\r\nAccept: application/json\r\n\r\n", true},
		{"a HEAD from a browser", strings.Replace(pageLoad(askHost, chromeUA), "GET", "HEAD", 1), false},
		{"a WebSocket", pageLoad(askHost, chromeUA, "Upgrade: websocket\r\n", "Connection: Upgrade\r\n"), false},
		{"a browser's fetch", strings.Replace(pageLoad(askHost, chromeUA, "Sec-Fetch-Mode: cors\r\n"), "text/html,application/xhtml+xml", "*/*", 1), false},
		{"a crawler", pageLoad(askHost, googlebot), false},
		{"a form of 1 KiB + 1", post(page.TokenField+"="+strings.Repeat("a", ask.MaxFormBytes+1-len(page.TokenField)-1), chromeUA, overHTTPS...), false},
		{"a file upload", strings.Replace(post("x", chromeUA, overHTTPS...), "application/x-www-form-urlencoded", "multipart/form-data; boundary=b", 1), false},
		{"a chunked form that never ends", strings.Replace(post("", chromeUA, overHTTPS...), "Content-Length: 0", "Transfer-Encoding: chunked", 1) + strings.Repeat(never, 10), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newAskPods(t, 1, w)[0]
			head := strings.HasPrefix(tc.req, "HEAD")
			if got, want := p.exchange(t, tc.req), string(page.Asleep(tc.json, head)); got != want {
				t.Fatalf("got\n%q\nwant\n%q", got, want)
			}
			assertNoWake(t, p, 1)
			if n := p.wakes(metrics.ResultTurnedAway); n != 1 {
				t.Fatalf("wakes_total{result=turned_away} = %v, want 1", n)
			}
		})
	}
}

func TestAGooglebotPostingAFreshTokenWakesNothing(t *testing.T) {
	p := newAskPods(t, 1, askWorkload())[0]
	if got := p.exchange(t, post(clickForm(p.token()), googlebot, overHTTPS...)); got != string(page.Asleep(false, false)) {
		t.Fatalf("got %q", got)
	}
	assertNoWake(t, p, 1)
}

func TestAHostWithMarkupOrControlCharactersIsShownEscaped(t *testing.T) {
	p := newAskPods(t, 1, askWorkload())[0]
	resp := p.exchange(t, pageLoad(`<script>alert(1)</script>`+"\x01\x1b[31m"+`"x`, chromeUA, "Sec-Fetch-Mode: navigate\r\n"))
	if status(resp) != "HTTP/1.1 200 OK" {
		t.Fatalf("got %s", resp)
	}
	if strings.Contains(resp, "<script>alert") || strings.Contains(resp, "\x01") || strings.Contains(resp, "\x1b") {
		t.Fatalf("the Host is shown unescaped:\n%q", resp)
	}
	if !strings.Contains(resp, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("the Host is not shown escaped:\n%q", resp)
	}
}

// Each connection's count is read once it is closed (the doorman counts
// before it closes), so the test tells which one was counted: the TCP
// check none, the TLS one once.
func TestNonHTTPIsClosedWithNothingSentAndATCPCheckIsNotCounted(t *testing.T) {
	p := newAskPods(t, 1, askWorkload())[0]
	c := p.dial()
	_ = c.CloseWrite() // a TCP health check: connects and closes
	if got := readAll(t, c); len(got) != 0 {
		t.Fatalf("a TCP check got %q", got)
	}
	assertNoWake(t, p, 0)
	if n := p.wakes(metrics.ResultTurnedAway); n != 0 {
		t.Fatalf("a TCP check counted: wakes_total{result=turned_away} = %v, want 0", n)
	}
	tls := p.dial()
	_, _ = tls.Write([]byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"))
	if got := readAll(t, tls); len(got) != 0 {
		t.Fatalf("TLS got %q, want nothing", got)
	}
	assertNoWake(t, p, 1)
	if n := p.wakes(metrics.ResultTurnedAway); n != 1 {
		t.Fatalf("TLS: wakes_total{result=turned_away} = %v, want 1", n)
	}
}

func TestKnownProbesAndHiddenFilesAreAnsweredAsForAnyWorkload(t *testing.T) {
	p := newAskPods(t, 1, askWorkload())[0]
	if got := p.exchange(t, "GET /healthz HTTP/1.1\r\nHost: x\r\nUser-Agent: kube-probe/1.37\r\n\r\n"); got != string(page.Probe(false)) {
		t.Fatalf("a probe got %q", got)
	}
	if got := p.exchange(t, "GET /.env HTTP/1.1\r\nHost: x\r\nUser-Agent: "+chromeUA+"\r\n\r\n"); got != string(page.NotFound(false)) {
		t.Fatalf("a hidden file got %q", got)
	}
	assertNoWake(t, p, 1) // the hidden file, as for any workload
}

func TestOnceWakingABrowserGetsTheWakingUpPageAsWithRequest(t *testing.T) {
	w := askWorkload()
	w.Phase = "Resuming"
	p := newAskPods(t, 1, w)[0]
	resp := p.exchange(t, pageLoad(askHost, chromeUA, "Sec-Fetch-Mode: navigate\r\n"))
	if !bytes.Contains([]byte(resp), []byte("This environment is waking up")) {
		t.Fatalf("got %s", resp)
	}
}

// A doorman pod that has not read the wake key yet (just started) offers
// no button, which it could only refuse: a page load gets the asleep page
// saying so, reloading in 5 s, and a click (from another pod's page) wakes
// nothing and gets the same, not a 403.
func TestWithoutAKeyThePageOffersNoButton(t *testing.T) {
	for _, keys := range []Keys{nil, staticKeys{&ask.Ring{}}} {
		cfg := testConfig()
		cfg.Keys = keys
		h := newHarness(t, cfg, askWorkload())
		p := askPod{harness: h}
		for _, req := range []string{
			pageLoad(askHost, chromeUA, "Sec-Fetch-Mode: navigate\r\n", "Sec-Fetch-Site: none\r\n"),
			post(page.TokenField+"=", chromeUA, overHTTPS...),
		} {
			resp := p.exchange(t, req)
			if status(resp) != "HTTP/1.1 503 Service Unavailable" || header(resp, "Retry-After") != "5" ||
				header(resp, "Content-Security-Policy") != page.AsleepCSP || !strings.Contains(resp, "for a few seconds more") {
				t.Fatalf("keys %v: got %s", keys, resp)
			}
			for _, never := range []string{"<form", "<button", page.TokenField} {
				if strings.Contains(resp, never) {
					t.Fatalf("keys %v: the page has %q:\n%s", keys, never, resp)
				}
			}
		}
		assertNoWake(t, p, 0)
	}
}

// A click the cluster does not answer (the API server away) gets the
// asleep page again, saying nothing woke yet, with a fresh button to press
// again: not the plain 503 for what is not a browser, and not counted.
// Once the cluster answers, the next click wakes.
func TestAClickTheClusterDidNotAnswerGetsTheAsleepPageAgain(t *testing.T) {
	p := newAskPods(t, 1, askWorkload())[0]
	p.rec.mu.Lock()
	p.rec.clickErr = errors.New("the API server is away")
	p.rec.mu.Unlock()
	resp := p.exchange(t, post(clickForm(p.token()), chromeUA, overHTTPS...))
	wantAsleepPage(t, p, resp, "HTTP/1.1 503 Service Unavailable", "the cluster did not answer")
	if got := header(resp, "Retry-After"); got != "5" {
		t.Fatalf("Retry-After %q, want 5", got)
	}
	assertNoWake(t, p, 0)
	p.rec.mu.Lock()
	p.rec.clickErr = nil
	p.rec.mu.Unlock()
	resp = p.exchange(t, post(clickForm(p.token()), chromeUA, overHTTPS...))
	if want := string(page.Waking{Host: askHost, Path: "/pulls/412"}.Render()); resp != want {
		t.Fatalf("the click once the cluster answers got\n%s\nwant the waking-up page", resp)
	}
	if n := p.rec.lastClick.count(); n != 1 {
		t.Fatalf("%d clicks stamped, want 1", n)
	}
}

// Under pause-until a person's browser gets the asleep page saying until
// when, with no button, and is not counted as turned away; what is not a
// browser gets the paused 503 and is counted. Nothing wakes. For a
// workload that asks and one that wakes on request alike.
func TestUnderPauseUntilABrowserGetsTheAsleepPageSayingUntilWhen(t *testing.T) {
	until := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	for _, asks := range []bool{true, false} {
		w := askWorkload()
		w.Ask, w.PauseUntil = asks, until
		p := newAskPods(t, 1, w)[0]
		for _, req := range []string{
			pageLoad(askHost, chromeUA, "Sec-Fetch-Mode: navigate\r\n", "Sec-Fetch-Site: none\r\n"),
			pageLoad(askHost, safariUA),
			post(clickForm(p.token()), chromeUA, overHTTPS...),
		} {
			resp := p.exchange(t, req)
			if status(resp) != "HTTP/1.1 200 OK" || header(resp, "Content-Security-Policy") != page.AsleepCSP ||
				!strings.Contains(resp, "It stays asleep until <b>"+until.UTC().Format("Mon 2 Jan 2006, 15:04")+" UTC</b>") {
				t.Fatalf("asks %v: a browser got\n%s\nwant the asleep page saying until when", asks, resp)
			}
			for _, never := range []string{"<form", "<button", page.TokenField} {
				if strings.Contains(resp, never) {
					t.Fatalf("asks %v: the page has %q:\n%s", asks, never, resp)
				}
			}
		}
		assertNoWake(t, p, 0)
		resp := p.exchange(t, "GET /api/items HTTP/1.1\r\nHost: "+askHost+"\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n")
		if status(resp) != "HTTP/1.1 503 Service Unavailable" || !strings.Contains(resp, "paused until "+until.UTC().Format(time.RFC3339)) {
			t.Fatalf("asks %v: curl got\n%s\nwant the paused 503", asks, resp)
		}
		assertNoWake(t, p, 1)
		if got := p.wakes(metrics.ResultTurnedAway); got != 1 {
			t.Fatalf("asks %v: turned_away %v, want 1 (the curl alone)", asks, got)
		}
	}
}

func TestAfterAClickAPageLoadGetsTheWakingUpPage(t *testing.T) {
	w := askWorkload()
	w.LastRequest = time.Now().Add(-5 * time.Second)
	p := newAskPods(t, 1, w)[0]
	resp := p.exchange(t, pageLoad(askHost, chromeUA, "Sec-Fetch-Mode: navigate\r\n"))
	if want := string(page.Waking{Host: askHost, Path: "/pulls/412"}.Render()); resp != want {
		t.Fatalf("got\n%s\nwant the waking-up page", resp)
	}
	assertNoWake(t, p, 0)
}
