package page

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, raw []byte, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading response: %v\n%s", err, raw)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, string(body)
}

func TestWakingPageHeadersAndBody(t *testing.T) {
	d := 14 * time.Second
	resp, body := parse(t, Waking{Host: "pr-412.preview.example.dev", Path: "/<script>alert(1)</script>", Starting: &d}.Render(), "GET")
	if resp.StatusCode != 503 {
		t.Fatalf("status %d, want 503", resp.StatusCode)
	}
	for k, v := range map[string]string{
		"Cache-Control": "no-store", "Retry-After": "3", "X-Robots-Tag": "noindex",
		"Connection": "", "Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": CSP,
	} {
		if got := resp.Header.Get(k); k != "Connection" && got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !resp.Close {
		t.Error("want Connection: close")
	}
	for _, want := range []string{`<meta http-equiv="refresh" content="3">`, "pr-412.preview.example.dev/&lt;script&gt;alert(1)&lt;/script&gt;", "Starting for 14 s", `rel="icon" href="data:image/svg+xml,`} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script") {
		t.Error("page carries a script")
	}
	if !strings.Contains(CSP, "default-src 'none'") || !strings.Contains(CSP, "img-src data:") || strings.Contains(CSP, "script-src") {
		t.Errorf("CSP %q must deny scripts and allow images only from data:", CSP)
	}
}

func TestWakingPageBeforeResumingShowsNoTime(t *testing.T) {
	_, body := parse(t, Waking{Host: "h", Path: "/"}.Render(), "GET")
	if strings.Contains(body, "Starting for") || !strings.Contains(body, "Starting up") {
		t.Fatalf("body before Resuming: %s", body)
	}
}

func TestWakingPageForHEADHasNoBody(t *testing.T) {
	raw := Waking{Host: "h", Path: "/", Head: true}.Render()
	if !bytes.HasSuffix(raw, []byte("\r\n\r\n")) {
		t.Fatalf("HEAD answer carries a body: %q", raw)
	}
	resp, _ := parse(t, raw, "HEAD")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("HEAD: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestFixedAnswers(t *testing.T) {
	cases := []struct {
		name       string
		raw        []byte
		code       int
		retryAfter string
		body       string
	}{
		{"a probe gets 503 with nothing else", Probe(false), 503, "", ""},
		{"Google's health check gets 200", GoogleHC(false), 200, "", ""},
		{"a hidden file gets 404", NotFound(false), 404, "", ""},
		{"Ask mode gets 503 with Retry-After: 300 in plain text", Asleep(false, false), 503, "300", asleepText + "\n"},
		{"pause-until gets 503 with Retry-After the time left, saying until when", Paused(pausedTill, pausedTill.Add(-2*time.Hour), false, false), 503, "7200",
			"This environment is paused until 2026-10-23T20:00:00Z. Someone with access to the cluster can wake it sooner with `kubectl napwake wake`.\n"},
		{"pause-until a few seconds from its end asks for a retry in a minute", Paused(pausedTill, pausedTill.Add(-5*time.Second), false, false), 503, "60",
			"This environment is paused until 2026-10-23T20:00:00Z. Someone with access to the cluster can wake it sooner with `kubectl napwake wake`.\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := parse(t, tc.raw, "GET")
			if resp.StatusCode != tc.code || !resp.Close || resp.Header.Get("Retry-After") != tc.retryAfter || body != tc.body {
				t.Fatalf("got %d close=%v Retry-After=%q body=%q", resp.StatusCode, resp.Close, resp.Header.Get("Retry-After"), body)
			}
		})
	}
	resp, body := parse(t, Asleep(true, false), "GET")
	if resp.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(body, `{"status":"asleep"`) {
		t.Fatalf("JSON asleep answer: %v %q", resp.Header, body)
	}
}

// pausedTill is a pause-until for the answers' tests.
var pausedTill = time.Date(2026, 10, 23, 20, 0, 0, 0, time.UTC)

func TestPausedAnswersJSONWhenAsked(t *testing.T) {
	resp, body := parse(t, Paused(pausedTill, pausedTill.Add(-time.Hour), true, false), "GET")
	if resp.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(body, `{"status":"paused","until":"2026-10-23T20:00:00Z"`) {
		t.Fatalf("JSON paused answer: %v %q", resp.Header, body)
	}
}
