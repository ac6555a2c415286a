package framework

import (
	"context"
	"net"
	"strconv"
	"strings"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 8192)
				n, _ := c.Read(buf)
				if !strings.Contains(string(buf[:n]), "User-Agent: "+BrowserUA+"\r\n") {
					_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
					return
				}
				body := `<h1>form</h1><form method="post"><input type="hidden" name="t" value="x"><button type="submit">Go</button></form>`
				status := "200 OK"
				if string(buf[:4]) == "POST" && n > 0 {
					body, status = `<h1>posted</h1><span class="dot">.</span>`, "503 Service Unavailable"
				}
				_, _ = c.Write([]byte("HTTP/1.1 " + status + "\r\nContent-Type: text/html\r\nConnection: close\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body))
			}()
		}
	}()
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
	url := "http://" + ln.Addr().String() + "/"
	if err := tab.Open(url, "button"); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	if s, err := tab.Status(); err != nil || s != 200 {
		t.Fatalf("status %d (%v), want 200", s, err)
	}
	if err := tab.Click("button", ".dot"); err != nil {
		t.Fatal(err)
	}
	if s, err := tab.Status(); err != nil || s != 503 {
		t.Fatalf("status after the post %d (%v), want 503", s, err)
	}
	if h, err := tab.Text("h1"); err != nil || h != "posted" {
		t.Fatalf("heading %q (%v)", h, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
