package framework

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestTheBrowserOpensAPageAndClicks drives the browser against a loopback
// server standing in for the doorman: a page with a form, and what its post
// gets. It skips where no Chromium is installed.
func TestTheBrowserOpensAPageAndClicks(t *testing.T) {
	if _, err := ChromiumPath(); err != nil {
		t.Skip(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.UserAgent() != BrowserUA {
			http.Error(w, "a robot", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`<h1>posted</h1><span class="dot">.</span>`))
			return
		}
		_, _ = w.Write([]byte(`<h1>form</h1><form method="post"><input type="hidden" name="t" value="x"><button type="submit">Go</button></form>`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := NewBrowser(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tab, err := b.NewTab()
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Open(srv.URL+"/", "button"); err != nil {
		t.Fatalf("opening %s: %v", srv.URL, err)
	}
	if s, err := tab.Status(); err != nil || s != 200 {
		t.Fatalf("status %d (%v), want 200", s, err)
	}
	if err := tab.Click("button", ".dot"); err != nil {
		t.Fatalf("clicking: %v", err)
	}
	if s, err := tab.Status(); err != nil || s != 503 {
		t.Fatalf("status after the post %d (%v), want 503", s, err)
	}
	if h, err := tab.Text("h1"); err != nil || h != "posted" {
		t.Fatalf("heading %q (%v)", h, err)
	}
}
