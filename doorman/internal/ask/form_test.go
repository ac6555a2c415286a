package ask

import (
	"bytes"
	"io"
	"net/http/httputil"
	"strings"
	"testing"

	"napwake.dev/doorman/internal/classify"
)

func byCL(cl string) *classify.Request {
	return &classify.Request{ContentLength: cl, HasContentLength: true}
}

var chunked = &classify.Request{TransferEncoding: "chunked", HasTransferEncoding: true}

func TestReadForm(t *testing.T) {
	form := "user=ana&" + "napwake-token=abc&x=1"
	kib := "napwake-token=abc&pad=" + strings.Repeat("p", MaxFormBytes-len("napwake-token=abc&pad="))
	cases := []struct {
		name   string
		req    *classify.Request
		body   string
		status FormStatus
		token  string // "-" for no token field
	}{
		{"a form with Content-Length is read", byCL("21"), "napwake-token=abc&x=1", FormRead, "abc"},
		{"the button's field is found among others", byCL("30"), form, FormRead, "abc"},
		{"a form of exactly 1 KiB is read", byCL("1024"), kib, FormRead, "abc"},
		{"a form of 1 KiB + 1 is a larger form", byCL("1025"), kib + "p", FormTooLarge, "-"},
		{"a larger form is refused before it is read", byCL("1025"), "", FormTooLarge, "-"},
		{"a Content-Length past any number is a larger form", byCL("99999999999999999999999"), "", FormTooLarge, "-"},
		{"a body shorter than its Content-Length needs more", byCL("21"), "napwake-token=a", FormNeedMore, "-"},
		{"bytes past the Content-Length are not the form's", byCL("17"), "napwake-token=abc&napwake-token=def", FormRead, "abc"},
		{"a negative Content-Length cannot be read", byCL("-1"), "", FormBad, "-"},
		{"a Content-Length with a sign cannot be read", byCL("+5"), "a=b&c", FormBad, "-"},
		{"a list of Content-Lengths cannot be read", byCL("5, 5"), "a=b&c", FormBad, "-"},
		{"an empty Content-Length cannot be read", byCL(""), "", FormBad, "-"},
		{"no framing is an empty form", &classify.Request{}, "napwake-token=abc", FormRead, "-"},
		{"Content-Length and Transfer-Encoding both cannot be read", &classify.Request{ContentLength: "3", HasContentLength: true, TransferEncoding: "chunked", HasTransferEncoding: true}, "0\r\n\r\n", FormBad, "-"},
		{"a framing header twice cannot be read", &classify.Request{ContentLength: "3", HasContentLength: true, FramingRepeated: true}, "a=b", FormBad, "-"},
		{"a coding other than chunked cannot be read", &classify.Request{TransferEncoding: "gzip, chunked", HasTransferEncoding: true}, "0\r\n\r\n", FormBad, "-"},
		// Sent on chunked by a proxy.
		{"a chunked form is read", chunked, "11\r\nnapwake-token=abc\r\n0\r\n\r\n", FormRead, "abc"},
		{"a chunked form in pieces, with extensions and trailers, is read", chunked, "8;a=b\r\nnapwake-\r\n9 \r\ntoken=abc\r\n0\r\nX-T: 1\r\n\r\n", FormRead, "abc"},
		{"Chunked in capitals is chunked", &classify.Request{TransferEncoding: "Chunked", HasTransferEncoding: true}, "3\r\na=b\r\n0\r\n\r\n", FormRead, "-"},
		{"chunk lines may end in a bare LF", chunked, "11\nnapwake-token=abc\n0\n\n", FormRead, "abc"},
		{"a chunked form of exactly 1 KiB is read", chunked, "400\r\n" + kib + "\r\n0\r\n\r\n", FormRead, "abc"},
		{"a chunked form of 1 KiB + 1 is a larger form", chunked, "400\r\n" + kib + "\r\n1\r\np\r\n0\r\n\r\n", FormTooLarge, "-"},
		{"a chunk size past any number is a larger form", chunked, "ffffffffffffffffffffffff\r\n", FormTooLarge, "-"},
		{"a chunked form that has not ended needs more", chunked, "11\r\nnapwake-token=abc\r\n", FormNeedMore, "-"},
		{"a chunked form cut inside a chunk needs more", chunked, "11\r\nnapwake", FormNeedMore, "-"},
		{"a chunked form cut inside its trailers needs more", chunked, "0\r\nX-T: 1\r\n", FormNeedMore, "-"},
		{"a chunked body that never ends within 2 KiB is a larger form", chunked, strings.Repeat("1\r\na\r\n", 400), FormTooLarge, "-"},
		{"a chunk longer than its size cannot be read", chunked, "3\r\nabcd\r\n0\r\n\r\n", FormBad, "-"},
		{"a chunk size that is not hex cannot be read", chunked, "zz\r\n", FormBad, "-"},
		{"an empty chunk size cannot be read", chunked, "\r\nabc", FormBad, "-"},
		// The fields.
		{"a form without the button's field has no token", byCL("13"), "user=ana&pw=x", FormRead, "-"},
		{"a percent-encoded field name is the button's", byCL("19"), "napwake%2Dtoken=abc", FormRead, "abc"},
		{"the button's field twice has no token", byCL("35"), "napwake-token=abc&napwake-token=abc", FormRead, ""},
		{"a token that cannot be unescaped is empty", byCL("17"), "napwake-token=%zz", FormRead, ""},
		{"a pair that cannot be unescaped is skipped", byCL("25"), "%zz=1&napwake-token=abc&=", FormRead, "abc"},
		{"semicolons do not separate fields", byCL("21"), "a=1;napwake-token=abc", FormRead, "-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := ReadForm(tc.req, []byte(tc.body))
			token := f.Token
			if !f.HasToken {
				token = "-"
			}
			if f.Status != tc.status || token != tc.token {
				t.Fatalf("ReadForm = %v, token %q; want %v, %q", f.Status, token, tc.status, tc.token)
			}
		})
	}
}

// FuzzReadForm: ReadForm must never panic, never ask for more once it has
// MaxBodyBytes, decide the same on bytes past MaxBodyBytes as without them,
// and never hold more than MaxFormBytes of form; where net/http's chunked
// reader and dechunk both read a body to its end, they read the same bytes.
func FuzzReadForm(f *testing.F) {
	for _, s := range []string{
		"11\r\nnapwake-token=abc\r\n0\r\n\r\n", "8;a=b\r\nnapwake-\r\n9\r\ntoken=abc\r\n0\r\nX: 1\r\n\r\n",
		"napwake-token=abc&x=1", "3\r\nabcd\r\n", "ffffffff\r\n", "0\r\n\r\n", "",
	} {
		f.Add([]byte(s), "chunked", true, false)
		f.Add([]byte(s), "21", false, true)
	}
	f.Fuzz(func(t *testing.T, body []byte, framing string, te, cl bool) {
		r := &classify.Request{HasTransferEncoding: te, HasContentLength: cl}
		if te {
			r.TransferEncoding = framing
		} else {
			r.ContentLength = framing
		}
		got := ReadForm(r, body)
		if got.Status == FormNeedMore && len(body) >= MaxBodyBytes {
			t.Fatalf("needs more with %d bytes", len(body))
		}
		if len(body) > MaxBodyBytes {
			if again := ReadForm(r, body[:MaxBodyBytes]); again != got {
				t.Fatalf("bytes past MaxBodyBytes changed %+v to %+v", again, got)
			}
		}
		if len(got.Token) > MaxFormBytes {
			t.Fatalf("a token of %d bytes", len(got.Token))
		}
		if len(body) > MaxChunkedBytes {
			body = body[:MaxChunkedBytes]
		}
		var buf [MaxFormBytes]byte
		data, st := dechunk(body, buf[:0])
		if len(data) > MaxFormBytes {
			t.Fatalf("dechunk held %d bytes", len(data))
		}
		std, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(body)))
		if st == FormRead && err == nil && !bytes.Equal(data, std) {
			t.Fatalf("dechunk read %q, net/http %q", data, std)
		}
	})
}
