package ask

import (
	"bytes"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"napwake.dev/doorman/internal/classify"
	"napwake.dev/doorman/internal/page"
)

// MaxFormBytes bounds a form the doorman reads: the button's form is about
// 100 bytes, and the spec reads forms "up to 1 KiB"; 1 KiB + 1 is a larger
// form, turned away.
const MaxFormBytes = 1 << 10

// MaxChunkedBytes bounds the bytes of a chunked body read: 1 KiB of form
// plus the chunk sizes, extensions and trailers of a proxy that sends it on
// in pieces. It is also the most the doorman reads past a request's head
// (MaxBodyBytes).
const MaxChunkedBytes = 2 << 10

// MaxBodyBytes is the most the doorman reads past the head before judging:
// no form larger is read.
const MaxBodyBytes = MaxChunkedBytes

// FormStatus is what reading a form's body says.
type FormStatus int

const (
	// FormNeedMore: the body has not ended within the bytes given; read
	// more, up to MaxBodyBytes past the head, and ask again.
	FormNeedMore FormStatus = iota
	// FormRead: the whole form was read.
	FormRead
	// FormTooLarge: more than MaxFormBytes of form, or a chunked body that
	// has not ended within MaxChunkedBytes.
	FormTooLarge
	// FormBad: framing that cannot be read safely: Content-Length and
	// Transfer-Encoding both, either one twice, a coding other than
	// chunked, or a broken chunk.
	FormBad
)

var formStatusNames = [...]string{"NeedMore", "Read", "TooLarge", "Bad"}

// String names the status.
func (s FormStatus) String() string {
	if s >= 0 && int(s) < len(formStatusNames) {
		return formStatusNames[s]
	}
	return "FormStatus(?)"
}

// Form is a URL-encoded form, as far as the judgement needs it.
type Form struct {
	Status FormStatus
	// HasToken says the form has the button's field; Token is its value
	// when it has exactly one, decoded ("" when repeated or undecodable).
	HasToken bool
	Token    string
}

// ReadForm reads the URL-encoded form in body, the bytes after r's head so
// far, framed by r's Content-Length or chunked Transfer-Encoding (a request
// with neither has an empty body). It never reads more than MaxBodyBytes of
// body, never holds more than MaxFormBytes of form, and never panics.
func ReadForm(r *classify.Request, body []byte) Form {
	if len(body) > MaxBodyBytes {
		body = body[:MaxBodyBytes]
	}
	var data []byte
	var st FormStatus
	switch {
	case r.FramingRepeated || (r.HasContentLength && r.HasTransferEncoding):
		st = FormBad
	case r.HasTransferEncoding:
		if !strings.EqualFold(r.TransferEncoding, "chunked") {
			return Form{Status: FormBad}
		}
		var buf [MaxFormBytes]byte
		data, st = dechunk(body, buf[:0])
		if st == FormNeedMore && len(body) >= MaxChunkedBytes {
			st = FormTooLarge
		}
	case r.HasContentLength:
		data, st = byLength(r.ContentLength, body)
	default:
		st = FormRead
	}
	if st != FormRead {
		return Form{Status: st}
	}
	f := findToken(data)
	f.Status = FormRead
	return f
}

// byLength returns the body of a request with Content-Length cl.
func byLength(cl string, body []byte) ([]byte, FormStatus) {
	n, err := strconv.ParseUint(cl, 10, 63)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return nil, FormTooLarge
	case err != nil:
		return nil, FormBad
	case n > MaxFormBytes:
		return nil, FormTooLarge
	case uint64(len(body)) < n:
		return nil, FormNeedMore
	}
	return body[:n], FormRead
}

// dechunk decodes the chunked body at the start of b into dst (whose
// capacity is MaxFormBytes), trailers skipped (RFC 9112 section 7.1).
func dechunk(b, dst []byte) ([]byte, FormStatus) {
	for {
		line, rest, ok := cutLine(b)
		if !ok {
			return nil, FormNeedMore
		}
		size, st := chunkSize(line, MaxFormBytes-len(dst))
		if st != FormRead {
			return nil, st
		}
		b = rest
		if size == 0 {
			return skipTrailers(b, dst)
		}
		if len(b) < size {
			return nil, FormNeedMore
		}
		dst = append(dst, b[:size]...)
		end, rest, ok := cutLine(b[size:])
		switch {
		case !ok && len(b[size:]) < 2:
			return nil, FormNeedMore
		case !ok || len(end) != 0:
			return nil, FormBad // the chunk is longer than its size said
		}
		b = rest
	}
}

// skipTrailers reads trailer lines up to the blank line that ends the body.
func skipTrailers(b, data []byte) ([]byte, FormStatus) {
	for {
		line, rest, ok := cutLine(b)
		if !ok {
			return nil, FormNeedMore
		}
		if len(line) == 0 {
			return data, FormRead
		}
		b = rest
	}
}

// chunkSize reads a chunk-size line (hex digits, then optional
// whitespace and ;extensions). A size above budget is FormTooLarge, read no
// further than needed to know, so no number overflows.
func chunkSize(line []byte, budget int) (int, FormStatus) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 {
		return 0, FormBad
	}
	n := 0
	for _, c := range line {
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			return 0, FormBad
		}
		if n = n*16 + d; n > budget {
			return 0, FormTooLarge
		}
	}
	return n, FormRead
}

// cutLine splits b after its first line end (LF, or CRLF), returning the
// line without it; ok is false when b holds no line end.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return nil, b, false
	}
	return bytes.TrimSuffix(b[:nl], []byte{'\r'}), b[nl+1:], true
}

// isField reports whether the escaped name is page.TokenField.
func isField(name []byte) bool {
	if !bytes.ContainsAny(name, "%+") {
		return string(name) == page.TokenField
	}
	n, err := url.QueryUnescape(string(name))
	return err == nil && n == page.TokenField
}

// findToken looks for page.TokenField among the form's name=value pairs.
func findToken(data []byte) Form {
	var f Form
	seen := 0
	for len(data) > 0 {
		var pair []byte
		pair, data, _ = bytes.Cut(data, []byte{'&'})
		name, value, _ := bytes.Cut(pair, []byte{'='})
		if !isField(name) {
			continue
		}
		seen++
		f.HasToken = true
		f.Token = ""
		switch {
		case seen > 1:
		case !bytes.ContainsAny(value, "%+"):
			f.Token = string(value)
		default:
			if v, err := url.QueryUnescape(string(value)); err == nil {
				f.Token = v
			}
		}
	}
	return f
}
