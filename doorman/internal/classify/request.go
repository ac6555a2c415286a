package classify

import "strings"

// Request is what ClassifyHead read of an HTTP/1 request's head, for a
// workload that asks before waking: every header the asleep page's
// judgement (package ask) looks at. Values are as sent, trimmed; the first
// of each header counts.
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
	// body starts there. It is 0 when the head did not end within the bytes
	// given (or within MaxHeaderBytes), as ClassifyHead judges with final.
	HeadLen int
}

// newRequest makes the Request of a head whose request line (method and
// target) takes lineLen bytes, r being what Classify read of it and h its
// headers.
func newRequest(method, target string, r Result, h headers, lineLen int, complete bool) Request {
	q := Request{
		Method: method, Target: target, Host: r.Host, Path: r.Path,
		UserAgent: h.userAgent, Accept: h.accept, Upgrade: h.upgrade,
		SecFetchSite: h.secFetchSite, SecFetchMode: h.secFetchMode, SecFetchUser: h.secFetchUser, Origin: h.origin,
		ContentType: h.contentType, ContentLength: h.contentLength, TransferEncoding: h.transferEnc,
		HasContentLength: h.hasLength, HasTransferEncoding: h.hasTransferEnc, FramingRepeated: h.framingRepeated,
	}
	if complete {
		q.HeadLen = lineLen + h.end
	}
	return q
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
