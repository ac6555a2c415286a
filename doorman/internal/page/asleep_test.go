package page

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

const tok = "AQhBQUFBQUFBQQAAAABo-abc_123"

func TestTheAsleepPage(t *testing.T) {
	resp, body := parse(t, AsleepPage{Host: "pr-412.preview.example.dev", Path: "/pr/42", Token: tok}.Render(), "GET")
	if resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("status %d, close %v; want 200 and Connection: close", resp.StatusCode, resp.Close)
	}
	for k, v := range map[string]string{
		"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "X-Robots-Tag": "noindex",
		"Referrer-Policy": "same-origin", "X-Frame-Options": "DENY", "Content-Security-Policy": AsleepCSP,
		"X-Content-Type-Options": "nosniff", "Retry-After": "",
	} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	for _, want := range []string{
		`<meta http-equiv="refresh" content="60">`,
		`<p class="addr">pr-412.preview.example.dev/pr/42</p>`,
		`<form method="post"><input type="hidden" name="napwake-token" value="` + tok + `"><button type="submit">Wake it</button></form>`,
		`rel="icon" href="data:image/svg+xml,`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	for _, never := range []string{"action=", "class=\"note\"", "autofocus", "onload", "http://", "https://"} {
		if strings.Contains(strings.ReplaceAll(body, "http://www.w3.org/2000/svg", ""), never) {
			t.Errorf("body has %q:\n%s", never, body)
		}
	}
}

func TestTheAsleepPagesPolicyAllowsOnlyItsOwnStyleAndScript(t *testing.T) {
	_, body := parse(t, AsleepPage{Host: "h", Path: "/", Token: tok}.Render(), "GET")
	hashes := func(re string) []string {
		var out []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(body, -1) {
			sum := sha256.Sum256([]byte(m[1]))
			out = append(out, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
		}
		return out
	}
	styles, scripts := hashes(`<style>(.*?)</style>`), hashes(`<script>(.*?)</script>`)
	if len(styles) != 1 || len(scripts) != 1 {
		t.Fatalf("%d styles and %d scripts, want one each", len(styles), len(scripts))
	}
	want := "default-src 'none'; style-src " + styles[0] + "; script-src " + scripts[0] +
		"; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	if AsleepCSP != want {
		t.Fatalf("CSP\n%s\nwant\n%s", AsleepCSP, want)
	}
	if regexp.MustCompile(`<[^>]* (style|on[a-z]+)=`).MatchString(body) {
		t.Error("the page has inline style or event attributes the policy would block")
	}
}

func TestTheAsleepPageNeverSubmitsItself(t *testing.T) {
	for _, never := range []string{"submit(", "requestSubmit", "click(", "fetch(", "XMLHttpRequest", "location"} {
		if strings.Contains(asleepScript, never) {
			t.Errorf("the script has %q", never)
		}
	}
}

func TestTheAsleepPageAfterAClickThatWokeNothing(t *testing.T) {
	cases := []struct {
		name       string
		notice     Notice
		status     int
		retryAfter string
		says       []string
	}{
		{"an expired button gets 403 saying the page may have been open too long", NoticeExpired, 403, "", []string{"Nothing woke", "open too long"}},
		{"a click from another address gets 403 naming kubectl napwake wake", NoticeOtherAddress, 403, "", []string{"Nothing woke", "another address", "<code>kubectl napwake wake</code>"}},
		{"an old browser gets 403 saying to use a current browser or kubectl napwake wake", NoticeOldBrowser, 403, "", []string{"Nothing woke", "current browser", "<code>kubectl napwake wake</code>"}},
		{"a click within a minute gets 429 with Retry-After: 60, to try again in a minute", NoticeTooSoon, 429, "60", []string{"Try again in a minute"}},
		{"a click the cluster did not answer gets 503 with Retry-After: 5, to press again", NoticeTryAgain, 503, "5", []string{"Nothing woke yet", "did not answer", "again in a moment"}},
		{"a notice out of range is a page load", Notice(99), 200, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := parse(t, AsleepPage{Host: "h", Path: "/", Token: tok, Notice: tc.notice}.Render(), "POST")
			if resp.StatusCode != tc.status || resp.Header.Get("Retry-After") != tc.retryAfter ||
				resp.Header.Get("Content-Security-Policy") != AsleepCSP || resp.Header.Get("X-Frame-Options") != "DENY" {
				t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
			}
			for _, want := range append(tc.says, `value="`+tok+`"><button type="submit">Wake it</button>`) {
				if !strings.Contains(body, want) {
					t.Errorf("body lacks %q:\n%s", want, body)
				}
			}
		})
	}
}

// Without a token (the doorman pod has not read the wake key yet) the page
// offers no button a click on which could only be refused: it says so,
// answers 503 with Retry-After: 5 and reloads every 5 s, whatever the
// notice asked for.
func TestTheAsleepPageWithoutATokenOffersNoButton(t *testing.T) {
	for _, n := range []Notice{NoticeNone, NoticeExpired, NoticeTryAgain} {
		resp, body := parse(t, AsleepPage{Host: "h", Path: "/", Notice: n}.Render(), "GET")
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "5" || resp.Header.Get("Content-Security-Policy") != AsleepCSP {
			t.Fatalf("notice %d: status %d, headers %v", n, resp.StatusCode, resp.Header)
		}
		for _, want := range []string{`<meta http-equiv="refresh" content="5">`, "for a few seconds more", "reloads by itself"} {
			if !strings.Contains(body, want) {
				t.Errorf("notice %d: body lacks %q:\n%s", n, want, body)
			}
		}
		for _, never := range []string{"<form", "<button", "<script", TokenField} {
			if strings.Contains(body, never) {
				t.Errorf("notice %d: body has %q:\n%s", n, never, body)
			}
		}
	}
}

// Under pause-until a browser gets the asleep page saying until when, with
// no button (nothing it sends can wake the workload) and no notice: 200.
func TestTheAsleepPageUnderPauseUntilSaysUntilWhen(t *testing.T) {
	until := time.Date(2026, 10, 23, 20, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	resp, body := parse(t, AsleepPage{Host: "h", Path: "/", Token: tok, Notice: NoticeExpired, Until: until}.Render(), "GET")
	if resp.StatusCode != 200 || resp.Header.Get("Retry-After") != "" || resp.Header.Get("Content-Security-Policy") != AsleepCSP {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	for _, want := range []string{`<meta http-equiv="refresh" content="60">`, "This environment is asleep",
		"It stays asleep until <b>Fri 23 Oct 2026, 18:00 UTC</b>", "<code>kubectl napwake wake</code>"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	for _, never := range []string{"<form", "<button", "<script", TokenField, `class="note"`} {
		if strings.Contains(body, never) {
			t.Errorf("body has %q:\n%s", never, body)
		}
	}
}

func TestTheAsleepPageShowsAnyHostSafely(t *testing.T) {
	cases := []struct {
		name, host, path, shown string
	}{
		{"markup in the Host is escaped", `<img src=x onerror=alert(1)>`, "/", `&lt;img src=x onerror=alert(1)&gt;/`},
		{"control characters are replaced", "a\x1b[31mb\x00c\rd", "/", "a\uFFFD[31mb\uFFFDc\uFFFDd/"},
		{"text direction overrides are replaced", "evil\u202ecom.example", "/", "evil\uFFFDcom.example/"},
		{"invalid UTF-8 is replaced", "a\xffb", "/", "a\uFFFDb/"},
		{"quotes are escaped", `"a'`, "/", "&#34;a&#39;/"},
		{"a long address is cut", strings.Repeat("h", 300), "/", strings.Repeat("h", 256) + "…"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, body := parse(t, AsleepPage{Host: tc.host, Path: tc.path, Token: tok}.Render(), "GET")
			if !strings.Contains(body, `<p class="addr">`+tc.shown+`</p>`) {
				t.Fatalf("address not shown as %q:\n%s", tc.shown, body)
			}
		})
	}
	_, body := parse(t, AsleepPage{Host: "h", Path: "/", Token: `"><script>alert(1)</script>`}.Render(), "GET")
	if strings.Count(body, "<script>") != 1 {
		t.Fatal("a token with markup added a script")
	}
}

func TestTheAsleep503(t *testing.T) {
	resp, body := parse(t, Asleep(true, false), "GET")
	var msg struct{ Status, Message string }
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.Status != "asleep" || !strings.Contains(msg.Message, "Wake it") {
		t.Fatalf("JSON body %q: %v", body, err)
	}
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "300" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	resp, body = parse(t, Asleep(false, false), "GET")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "300" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
		!strings.Contains(body, "asleep") || !strings.Contains(body, "kubectl napwake wake") {
		t.Fatalf("plain body %q, headers %v", body, resp.Header)
	}
}
