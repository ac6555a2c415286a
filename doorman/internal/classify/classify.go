// Package classify decides, from the first bytes a caller sends to a paused
// workload, what the doorman does with the connection: hold it and wake the
// workload, answer a known probe or health check, refuse a hidden file, send
// a browser the waking-up page, or wait for more bytes.
//
// It is pure: no clock, no I/O. The proxy calls ClassifyHead each time more
// bytes arrive, and once more with final set when no more will come (16 KiB
// read, silence, or the caller's half-close); Classify is the same decision
// without the request head, for tests and tools.
//
// It must not touch a socket or a clock, nor change the bytes it reads: the
// caller replays them byte-exact.
package classify

import (
	"bytes"
	"net/url"
	"strings"
)

// MaxHeaderBytes is how much of a caller's first bytes decide: 16 KiB holds
// any ordinary request's headers; browsers send theirs before large cookies.
const MaxHeaderBytes = 16 << 10

// maxMethodLen bounds an HTTP method: longer tokens are not HTTP.
const maxMethodLen = 24

// Kind is what the doorman does with a connection.
type Kind int

const (
	// NeedMore: the bytes so far cannot decide; read more.
	NeedMore Kind = iota
	// Hold: hold the connection and wake the workload (any request, TLS,
	// a database protocol, anything not recognised as a checker).
	Hold
	// Probe: a known probe, scraper or monitor: 503, Connection: close, no wake.
	Probe
	// GoogleHC: Google Cloud's load balancer health check: 200, no wake.
	GoogleHC
	// HiddenFile: a path with a part starting with a dot outside
	// /.well-known/: 404, no wake, counted as turned away.
	HiddenFile
	// Browser: a person's browser opening a page: the waking-up page, and wake.
	Browser
	// Asleep: the workload asks before waking (Ask mode), and this is HTTP:
	// 503 with Retry-After: 300, no wake, counted as turned away.
	Asleep
	// Refuse: Ask mode and not HTTP: closed with nothing sent, no wake,
	// counted as turned away.
	Refuse
)

var kindNames = [...]string{"NeedMore", "Hold", "Probe", "GoogleHC", "HiddenFile", "Browser", "Asleep", "Refuse"}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(?)"
}

// Wakes reports whether a connection of this kind wakes the workload.
func (k Kind) Wakes() bool { return k == Hold || k == Browser }

// Answered reports whether the doorman answers (or refuses) the connection
// itself instead of holding it.
func (k Kind) Answered() bool { return k != NeedMore && k != Hold }

// TurnedAway reports whether the kind counts as a request turned away
// ("What it turns away": the 503s and closed connections, and hidden-file
// scanners; not browsers, probes or health checks).
func (k Kind) TurnedAway() bool { return k == HiddenFile || k == Asleep || k == Refuse }

// BuiltinAgents are the User-Agent prefixes the doorman knows as probes,
// scrapers and uptime monitors
// (docs/design/doorman.md#the-user-agents-the-doorman-knows).
var BuiltinAgents = []string{
	"kube-probe/", "Prometheus/", "Blackbox Exporter/", "vm_promscrape",
	"GrafanaAgent/", "Alloy/", "OpenTelemetry Collector", "otelcol",
	"Datadog Agent/", "Datadog/Synthetics", "ELB-HealthChecker/",
	"Amazon-Route53-Health-Check-Service", "GoogleStackdriverMonitoring-UptimeChecks",
	"Envoy/HC", "Mozilla/5.0+(compatible; UptimeRobot/", "Pingdom.com_bot",
	"NewRelicPinger/", "Uptime-Kuma/", "Gatus/",
}

// GoogleHCAgent is Google Cloud's load balancer health check, answered 200.
const GoogleHCAgent = "GoogleHC/"

// compatibleMarker starts the part of a browser-like User-Agent where a
// monitor posing as a browser names itself.
const compatibleMarker = "(compatible;"

// crawlerWords mark a Mozilla/ User-Agent as a robot, not a person's browser.
var crawlerWords = []string{"bot", "crawl", "spider", "slurp", "facebookexternalhit", "headless", "preview", "lighthouse", "python", "curl", "wget", "http-client", "scan"}

// Options are what, besides the bytes, decides.
type Options struct {
	// ExtraAgents are the user's prefixes (doorman.healthCheckUserAgents).
	ExtraAgents []string
	// Page sends browsers the waking-up page (spec.wake.page).
	Page bool
	// Ask means the workload asks before waking and is not already waking.
	Ask bool
}

// Result is the decision and what the waking-up page shows.
type Result struct {
	Kind Kind
	// Method of an HTTP request; empty when not HTTP.
	Method string
	// Host is the request's Host header (or absolute-form authority).
	Host string
	// Path is the request target's path, without query.
	Path string
	// WantsJSON: the client's Accept asks for JSON.
	WantsJSON bool
}

// Classify decides from b, the caller's bytes so far. final says no more
// bytes will be read for the decision. It never returns NeedMore when final
// is set or len(b) >= MaxHeaderBytes.
func Classify(b []byte, final bool, o Options) Result {
	r, _ := ClassifyHead(b, final, o)
	return r
}

// ClassifyHead is Classify, also returning the head of the HTTP/1 request
// it read (request.go): a workload that asks judges a request from it
// (package ask) without reading it again. The head is the zero Request when
// b is not HTTP/1 or more bytes are needed.
func ClassifyHead(b []byte, final bool, o Options) (Result, Request) {
	if len(b) > MaxHeaderBytes {
		b = b[:MaxHeaderBytes]
	}
	final = final || len(b) >= MaxHeaderBytes
	notHTTP := Result{Kind: Hold}
	if o.Ask {
		notHTTP.Kind = Refuse
	}
	if len(b) == 0 {
		if final {
			return notHTTP, Request{}
		}
		return Result{Kind: NeedMore}, Request{}
	}
	sp := bytes.IndexByte(b, ' ')
	method := b
	if sp >= 0 {
		method = b[:sp]
	}
	if len(method) == 0 || len(method) > maxMethodLen || !isToken(method) {
		return notHTTP, Request{}
	}
	if sp < 0 {
		if final {
			return notHTTP, Request{}
		}
		return Result{Kind: NeedMore}, Request{}
	}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		if final {
			return notHTTP, Request{}
		}
		return Result{Kind: NeedMore}, Request{}
	}
	line := strings.TrimSuffix(string(b[:nl]), "\r")
	parts := strings.Split(line, " ")
	if len(parts) != 3 || !strings.HasPrefix(parts[2], "HTTP/1.") || parts[1] == "" {
		return notHTTP, Request{}
	}
	r := Result{Method: parts[0]}
	r.Host, r.Path = splitTarget(parts[1])

	h, complete := parseHeaders(b[nl+1:])
	if !complete && !final {
		return Result{Kind: NeedMore}, Request{}
	}
	if h.host != "" {
		r.Host = h.host
	}
	r.WantsJSON = strings.Contains(asciiLower(h.accept), "json")
	r.Kind = decide(r, h, o)
	return r, newRequest(parts[0], parts[1], r, h, nl+1, complete)
}

func decide(r Result, h headers, o Options) Kind {
	if hiddenPath(r.Path) {
		return HiddenFile
	}
	getOrHead := r.Method == "GET" || r.Method == "HEAD"
	if getOrHead {
		if hasPrefixFold(h.userAgent, GoogleHCAgent) {
			return GoogleHC
		}
		if KnownChecker(h.userAgent, o.ExtraAgents) {
			return Probe
		}
	}
	if o.Ask {
		return Asleep
	}
	if o.Page && getOrHead && isBrowser(h) {
		return Browser
	}
	return Hold
}

// KnownChecker reports whether ua names a known probe, scraper or monitor:
// it starts with a built-in or extra prefix, or one follows "(compatible;".
// Matching ignores case, so case variants wake nothing either.
func KnownChecker(ua string, extra []string) bool {
	if ua == "" {
		return false
	}
	rest := ""
	if i := indexFold(ua, compatibleMarker); i >= 0 {
		rest = strings.TrimLeft(ua[i+len(compatibleMarker):], " \t")
	}
	for _, list := range [][]string{BuiltinAgents, extra} {
		for _, p := range list {
			if p == "" {
				continue
			}
			if hasPrefixFold(ua, p) || (rest != "" && hasPrefixFold(rest, p)) {
				return true
			}
		}
	}
	return false
}

func isBrowser(h headers) bool {
	if h.upgrade != "" || !strings.HasPrefix(h.userAgent, "Mozilla/") {
		return false
	}
	var buf [512]byte // lowered here, a User-Agent costs no allocation
	lua := append(buf[:0], h.userAgent...)
	for i, c := range lua {
		if c >= 'A' && c <= 'Z' {
			lua[i] = c + 'a' - 'A'
		}
	}
	for _, w := range crawlerWords {
		if bytes.Contains(lua, []byte(w)) {
			return false
		}
	}
	if h.secFetchMode != "" {
		return strings.EqualFold(h.secFetchMode, "navigate")
	}
	return strings.Contains(asciiLower(h.accept), "text/html")
}

// hiddenPath reports whether a part of p starts with a dot, except the
// leading /.well-known/ part. Percent-escapes are decoded first, so
// /%2eenv is hidden too.
func hiddenPath(p string) bool {
	if dec, err := url.PathUnescape(p); err == nil {
		p = dec
	}
	p = strings.ReplaceAll(p, "\\", "/")
	for i, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if i == 0 && part == ".well-known" {
			continue
		}
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

// splitTarget returns the authority (absolute form only) and path of an
// HTTP request target, without query or fragment.
func splitTarget(t string) (host, path string) {
	if i := strings.Index(t, "://"); i >= 0 && !strings.HasPrefix(t, "/") {
		rest := t[i+3:]
		j := strings.IndexAny(rest, "/?#")
		if j < 0 {
			return rest, "/"
		}
		host, t = rest[:j], rest[j:]
	}
	if j := strings.IndexAny(t, "?#"); j >= 0 {
		t = t[:j]
	}
	return host, t
}

type headers struct {
	userAgent, host, accept, secFetchMode, upgrade string
	// The rest are read for the asleep page's judgement (request.go).
	secFetchSite, secFetchUser, origin      string
	contentType, contentLength, transferEnc string
	// hasLength and hasTransferEnc say the header came, even empty;
	// framingRepeated that one of them came twice.
	hasLength, hasTransferEnc, framingRepeated bool
	// end is how many bytes the headers took, blank line included, once
	// complete.
	end int
}

// parseHeaders reads header lines up to the blank line. complete says the
// blank line was seen; otherwise only whole lines so far are used. A line
// that is not "name: value" is skipped; the first of each header counts.
func parseHeaders(b []byte) (h headers, complete bool) {
	return parseHeaderText(string(b))
}

// parseHeaderText is parseHeaders on a string: every value kept is a part
// of s, so reading a head costs one copy and no allocation per line.
func parseHeaderText(s string) (h headers, complete bool) {
	all := len(s)
	for len(s) > 0 {
		nl := strings.IndexByte(s, '\n')
		if nl < 0 {
			return h, false
		}
		line := strings.TrimSuffix(s[:nl], "\r")
		s = s[nl+1:]
		if line == "" {
			h.end = all - len(s)
			return h, true
		}
		colon := 0 // the name is a token, then the colon
		for colon < len(line) && tokenChar[line[colon]] {
			colon++
		}
		if colon == 0 || colon == len(line) || line[colon] != ':' {
			continue
		}
		if dst := h.field(line[:colon]); dst != nil && *dst == "" {
			*dst = trimSpaceTab(line[colon+1:])
		}
	}
	return h, false
}

// field returns where the header called name (any case) is kept, nil for a
// header not read. It notes a framing header seen twice.
func (h *headers) field(name string) *string {
	var lower [len("transfer-encoding")]byte // the longest name read
	if len(name) > len(lower) {
		return nil
	}
	for i := range len(name) {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	switch string(lower[:len(name)]) {
	case "user-agent":
		return &h.userAgent
	case "host":
		return &h.host
	case "accept":
		return &h.accept
	case "sec-fetch-mode":
		return &h.secFetchMode
	case "upgrade":
		return &h.upgrade
	case "sec-fetch-site":
		return &h.secFetchSite
	case "sec-fetch-user":
		return &h.secFetchUser
	case "origin":
		return &h.origin
	case "content-type":
		return &h.contentType
	case "content-length":
		h.framingRepeated = h.framingRepeated || h.hasLength
		h.hasLength = true
		return &h.contentLength
	case "transfer-encoding":
		h.framingRepeated = h.framingRepeated || h.hasTransferEnc
		h.hasTransferEnc = true
		return &h.transferEnc
	}
	return nil
}

// isToken reports whether b is an RFC 9110 token.
func isToken[T string | []byte](b T) bool {
	for i := range len(b) {
		if !tokenChar[b[i]] {
			return false
		}
	}
	return len(b) > 0
}

// tokenChar marks the bytes of an RFC 9110 token: letters, digits and
// !#$%&'*+-.^_`|~.
var tokenChar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
	}
	return t
}()

// trimSpaceTab is strings.Trim(s, " \t") without building a cutset.
func trimSpaceTab(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func hasPrefixFold(s, p string) bool {
	return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p)
}

// indexFold is strings.Index ignoring ASCII case. It lowers bytes one for
// one, so the index is valid in s even for invalid UTF-8.
func indexFold(s, sub string) int {
	return strings.Index(asciiLower(s), asciiLower(sub))
}

// asciiLower lowers ASCII letters only, byte for byte, so indexes stay
// valid in s; a string without capitals is returned as it is. It copies
// the runs between capitals whole: one allocation, few writes.
func asciiLower(s string) string {
	i := strings.IndexFunc(s, isUpperASCII)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		b.WriteByte(s[i] + 'a' - 'A')
		s = s[i+1:]
		i = strings.IndexFunc(s, isUpperASCII)
	}
	b.WriteString(s)
	return b.String()
}

func isUpperASCII(r rune) bool { return r >= 'A' && r <= 'Z' }
