package ask

import (
	"strings"
	"testing"
	"time"
)

// FuzzJudge: Judge must never panic, never need more once final, never
// decide differently on bytes past MaxBodyBytes, and never wake but for a
// POST from a browser navigating that said the click came from the page,
// whose form carries a good token, outside a minute of the last wake
// request.
func FuzzJudge(f *testing.F) {
	_, ring, good := fixture(f)
	for _, s := range []string{
		click(good, chromeHTTPS), click(good, chromeHTTP), click(good, safariHTTPS), click(good, safariHTTP), click(good, firefox85TLS),
		chunkedClick(good, chromeHTTPS), click(good, ua(chrome), html, "Origin: http://"+host+":8080\r\n"),
		click(good, ua(googlebot), html, httpO), postForm("user=ana", chromeHTTPS), get(ua(chrome), html, navigate),
		strings.Replace(click(good, chromeHTTPS), "POST", "HEAD", 1), click(good, ua(firefox60), html),
	} {
		f.Add([]byte(s), false, int64(0))
		f.Add([]byte(s), true, int64(30))
	}
	f.Fuzz(func(t *testing.T, b []byte, final bool, lastAgo int64) {
		r, ok := headOf(b)
		if !ok {
			return
		}
		var last time.Time
		if lastAgo != 0 {
			last = t0.Add(-time.Duration(lastAgo%3600) * time.Second)
		}
		body := b[r.HeadLen:]
		in := Input{Req: &r, Body: body, Final: final, Workload: workload, PausedAt: pausedA, Ring: ring, LastWakeRequest: last, Now: t0}
		v := Judge(&in)
		if v.Kind < NeedMore || v.Kind > Unavailable {
			t.Fatalf("kind %v", v.Kind)
		}
		if final && v.Kind == NeedMore {
			t.Fatal("needs more once final")
		}
		if len(body) > MaxBodyBytes {
			cut := in
			cut.Body = body[:MaxBodyBytes]
			if w := Judge(&cut); w.Kind != v.Kind {
				t.Fatalf("bytes past MaxBodyBytes changed %v to %v", w.Kind, v.Kind)
			}
		}
		if v.Kind != Wake {
			return
		}
		form := ReadForm(&r, body)
		fromPageKind, _ := fromPage(&r)
		switch {
		case r.Method != "POST" || !r.Browser():
			t.Fatalf("woke for %s from %q", r.Method, r.UserAgent)
		case form.Status != FormRead || !form.HasToken || Verify(form.Token, ring, workload, pausedA, t0) != TokenGood:
			t.Fatalf("woke without a good token: %+v", form)
		case fromPageKind != Wake:
			t.Fatalf("woke though the browser did not say the click came from the page: %+v", r)
		case RecentWake(last, t0):
			t.Fatalf("woke within a minute of the last wake request at %v", last)
		}
	})
}
