package classify

import (
	"strings"
	"testing"
)

// parse is ClassifyHead's head with final set, as the doorman has it once
// it judges; ok says it is an HTTP/1 request.
func parse(b []byte) (Request, bool) {
	_, r := ClassifyHead(b, true, Options{Page: true})
	return r, r.Method != ""
}

func TestClassifyHeadReadsWhatTheAsleepPageJudges(t *testing.T) {
	head := "POST /pr/42?x=1 HTTP/1.1\r\nHost: pr-412.preview.example.dev\r\nUser-Agent: " + chrome +
		"\r\nAccept: text/html\r\nSec-Fetch-Site: same-origin\r\nSec-Fetch-Mode: navigate\r\nSec-Fetch-User: ?1\r\n" +
		"Origin: https://pr-412.preview.example.dev\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 5\r\n\r\n"
	r, ok := parse([]byte(head + "a=b&c"))
	want := Request{
		Method: "POST", Target: "/pr/42?x=1", Host: "pr-412.preview.example.dev", Path: "/pr/42",
		UserAgent: chrome, Accept: "text/html", SecFetchSite: "same-origin", SecFetchMode: "navigate", SecFetchUser: "?1",
		Origin: "https://pr-412.preview.example.dev", ContentType: "application/x-www-form-urlencoded",
		ContentLength: "5", HasContentLength: true, HeadLen: len(head),
	}
	if !ok || r != want {
		t.Fatalf("ClassifyHead = %+v, %v\nwant %+v", r, ok, want)
	}
	if !r.Browser() || r.WantsJSON() {
		t.Fatalf("Browser() = %v, WantsJSON() = %v; want a browser not asking for JSON", r.Browser(), r.WantsJSON())
	}
}

func TestClassifyHead(t *testing.T) {
	const all = -1 // the head is all of the input
	cases := []struct {
		name     string
		in       string
		ok       bool
		headLen  int
		repeated bool
		te       bool
	}{
		{"a head without its blank line is not complete", "GET / HTTP/1.1\r\nHost: x\r\n", true, 0, false, false},
		{"a head with \\n line ends is complete", "GET / HTTP/1.1\nHost: x\n\nbody", true, len("GET / HTTP/1.1\nHost: x\n\n"), false, false},
		{"a request line alone is not a request", "GET / HTTP/1.1", false, 0, false, false},
		{"TLS is not a request", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n", false, 0, false, false},
		{"HTTP/2's preface is not HTTP/1", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false, 0, false, false},
		{"two Content-Lengths are repeated framing", "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", true, all, true, false},
		{"an empty Content-Length then another is repeated framing", "POST / HTTP/1.1\r\nContent-Length:\r\nContent-Length: 3\r\n\r\n", true, all, true, false},
		{"two Transfer-Encodings are repeated framing", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", true, all, true, true},
		{"a head past 16 KiB is not complete", "GET / HTTP/1.1\r\nX-Pad: " + strings.Repeat("p", MaxHeaderBytes) + "\r\n\r\n", true, 0, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.headLen == all {
				tc.headLen = len(tc.in)
			}
			r, ok := parse([]byte(tc.in))
			if ok != tc.ok || r.HeadLen != tc.headLen || r.FramingRepeated != tc.repeated || r.HasTransferEncoding != tc.te {
				t.Fatalf("ClassifyHead(%q) = %+v, %v; want ok %v, HeadLen %d, FramingRepeated %v, HasTransferEncoding %v",
					truncate(tc.in), r, ok, tc.ok, tc.headLen, tc.repeated, tc.te)
			}
		})
	}
}

// FuzzClassifyHead: ClassifyHead must never panic, never report a head
// longer than the bytes given or MaxHeaderBytes, give a head only with a
// decision, and read the same request line and Host into both.
func FuzzClassifyHead(f *testing.F) {
	for _, s := range []string{
		req("POST", "/", ua(chrome), "Content-Length: 3\r\n") + "a=b", req("GET", "http://h/x?y"),
		"GET / HTTP/1.1\nHost: a\nHost: b\n\n", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, b []byte, final bool) {
		c, r := ClassifyHead(b, final, Options{Page: true, Ask: true})
		if r.HeadLen > len(b) || r.HeadLen > MaxHeaderBytes {
			t.Fatalf("HeadLen %d of %d bytes", r.HeadLen, len(b))
		}
		if c.Kind == NeedMore && r != (Request{}) {
			t.Fatalf("a head %+v while needing more", r)
		}
		if r.Method != "" && (c.Method != r.Method || c.Host != r.Host || c.Path != r.Path) {
			t.Fatalf("the head read %q %q %q, the result %q %q %q", r.Method, r.Host, r.Path, c.Method, c.Host, c.Path)
		}
	})
}
