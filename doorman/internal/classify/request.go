package classify

import (
	"bytes"
	"strings"
)

// Request is what the doorman reads of an HTTP/1 request's head for a
// workload that asks before waking: every header the asleep page's
// judgement (package ask) looks at. Values are as sent, trimmed; the first
// of each header counts, as in Classify.
type Request struct {
	// Method and Target are the request line's; Target is as sent, query
	// included.
	Method, Target string
	// Host is the Host header (or the absolute-form authority); Path is
	// Target's path without query, as Result.Path.
	Host, Path string

	UserAgent, Accept, Upgrade string
	// SecFetchSite, SecFetchMode and SecFetchUser are the fetch metadata a
	// current browser sends to a secure origin.
	SecFetchSite, SecFetchMode, SecFetchUser string
	Origin                                   string

	ContentType string
	// ContentLength and TransferEncoding are the framing headers' values.
	// HasContentLength and HasTransferEncoding say they came, even empty;
	// FramingRepeated that one of them came more than once.
	ContentLength, TransferEncoding                        string
	HasContentLength, HasTransferEncoding, FramingRepeated bool

	// HeadLen is how many bytes the head took, its blank line included: the
	// body starts there. It is 0 while the head has not ended within the
	// bytes given (or within MaxHeaderBytes).
	HeadLen int
}

// ParseRequest reads the head of the HTTP/1 request at the start of b. ok is
// false when b does not start with a whole HTTP/1 request line. Only the
// first MaxHeaderBytes count, as in Classify; HeadLen says whether the head
// ended within them.
func ParseRequest(b []byte) (r Request, ok bool) {
	if len(b) > MaxHeaderBytes {
		b = b[:MaxHeaderBytes]
	}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return Request{}, false
	}
	s := string(b) // one copy: every string in r is a part of it
	method, rest, _ := strings.Cut(strings.TrimSuffix(s[:nl], "\r"), " ")
	target, proto, _ := strings.Cut(rest, " ")
	if !isToken(method) || len(method) > maxMethodLen || target == "" ||
		!strings.HasPrefix(proto, "HTTP/1.") || strings.IndexByte(proto, ' ') >= 0 {
		return Request{}, false
	}
	r.Method, r.Target = method, target
	r.Host, r.Path = splitTarget(r.Target)
	h, complete := parseHeaderText(s[nl+1:])
	if h.host != "" {
		r.Host = h.host
	}
	r.UserAgent, r.Accept, r.Upgrade = h.userAgent, h.accept, h.upgrade
	r.SecFetchSite, r.SecFetchMode, r.SecFetchUser, r.Origin = h.secFetchSite, h.secFetchMode, h.secFetchUser, h.origin
	r.ContentType, r.ContentLength, r.TransferEncoding = h.contentType, h.contentLength, h.transferEnc
	r.HasContentLength, r.HasTransferEncoding, r.FramingRepeated = h.hasLength, h.hasTransferEnc, h.framingRepeated
	if complete {
		r.HeadLen = nl + 1 + h.end
	}
	return r, true
}

// Browser reports whether the request is a person's browser navigating, as
// the waking-up page judges it: a User-Agent that starts with Mozilla/ and
// names no crawler, no Upgrade, and Sec-Fetch-Mode: navigate or, without
// fetch metadata, an Accept that asks for HTML. It does not look at the
// method.
func (r *Request) Browser() bool {
	return isBrowser(headers{userAgent: r.UserAgent, accept: r.Accept, secFetchMode: r.SecFetchMode, upgrade: r.Upgrade})
}

// WantsJSON reports whether the client's Accept asks for JSON, as
// Result.WantsJSON.
func (r *Request) WantsJSON() bool {
	return strings.Contains(asciiLower(r.Accept), "json")
}
