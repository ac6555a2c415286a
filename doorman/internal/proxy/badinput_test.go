package proxy

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"napwake.dev/doorman/internal/classify"
)

// TestBadInputIsHeldAndReplayedByteExact is the checklist of
// docs/design/doorman.md#bad-input over real sockets: whatever is not
// answered reaches the pod
// byte-exact once it is Ready, and nothing panics.
func TestBadInputIsHeldAndReplayedByteExact(t *testing.T) {
	cases := map[string]string{
		"one byte then silence":                   "G",
		"exactly 16,384 bytes without a line end": "GET /" + strings.Repeat("a", classify.MaxHeaderBytes-5),
		"16,385 bytes without a line end":         "GET /" + strings.Repeat("a", classify.MaxHeaderBytes-4),
		"an 8 KiB User-Agent":                     "GET / HTTP/1.1\r\nUser-Agent: " + strings.Repeat("u", 8<<10) + "\r\n\r\n",
		"\\n-only line ends":                      "GET / HTTP/1.1\nHost: x\n\n",
		"NUL bytes":                               "\x00\x00\x00\x00GET",
		"invalid UTF-8":                           "GET /\xff\xfe HTTP/1.1\r\nHost: \xc3\x28\r\n\r\n",
		"a header without a colon":                "GET / HTTP/1.1\r\nnonsense\r\n\r\n",
		"the HTTP/2 preface":                      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04\x00\x00\x00\x00\x00",
		"a TLS ClientHello":                       "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + strings.Repeat("\x42", 32),
		"an SSH banner":                           "SSH-2.0-OpenSSH_9.6\r\n",
		"a PROXY v1 header":                       "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\nGET / HTTP/1.1\r\n\r\n",
		"a PROXY v2 header":                       "\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c\x01\x02\x03\x04\x05\x06\x07\x08\x00\x01\x00\x02",
		"a Redis PING":                            "*1\r\n$4\r\nPING\r\n",
		"HTTP/1.0 without Host":                   "GET / HTTP/1.0\r\n\r\n",
		"an absolute-form target":                 "GET http://api.example/x HTTP/1.1\r\nHost: api.example\r\n\r\n",
		"CONNECT":                                 "CONNECT api:443 HTTP/1.1\r\nHost: api:443\r\n\r\n",
		"OPTIONS *":                               "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"Upgrade: websocket":                      "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
		"Expect: 100-continue":                    "POST /u HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
		"pipelined requests":                      "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n",
		"Content-Length with Transfer-Encoding":   "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n",
		"a body larger than the free 8 KiB":       "POST / HTTP/1.1\r\nContent-Length: 20000\r\n\r\n" + strings.Repeat("b", 20000),
	}
	cfg := testConfig()
	w := testWorkload()
	w.MaxWait = time.Minute
	h := newHarness(t, cfg, w)
	b := newBackend(t)
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			h.t = t
			h.table.SetEndpoints(h.route.Key(), nil)
			n := b.accepted()
			c := h.dial()
			if _, err := c.Write([]byte(in)); err != nil {
				t.Fatal(err)
			}
			wait(t, "held", func() bool { return h.held() == 1 })
			h.ready(b)
			wait(t, "the replay", func() bool { return len(b.received(n)) >= len(in) })
			if got := b.received(n); !bytes.Equal(got, []byte(in)) {
				t.Fatalf("pod got %q, want %q", truncate(got), truncate([]byte(in)))
			}
			_ = c.Close()
			wait(t, "the connection to end", func() bool { return h.held() == 0 })
		})
	}
}

func TestHalfCloseOrResetRightAfterARequestIsNeverPassedOn(t *testing.T) {
	for _, how := range []string{"half-close", "reset"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, testConfig(), testWorkload())
			b := newBackend(t)
			c := h.dial()
			// Held first: until the doorman has accepted it, "gone" would be
			// true at once, and a pod made Ready before the accept rightly
			// takes the connection straight through.
			wait(t, "held", func() bool { return h.held() == 1 })
			_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			if how == "reset" {
				_ = c.SetLinger(0)
				_ = c.Close()
			} else {
				_ = c.CloseWrite()
			}
			wait(t, "the connection to go", func() bool { return h.held() == 0 })
			h.ready(b)
			time.Sleep(100 * time.Millisecond) // give a wrong pass the chance to happen
			if b.accepted() != 0 {
				t.Fatal("a caller that left was passed on")
			}
		})
	}
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
