package ask

import (
	"strings"

	"napwake.dev/doorman/internal/classify"
)

// fromPage judges whether the browser says the click came from the page
// (docs/design/ask.md#telling-a-click-from-a-robot). It returns Wake
// when it does, else the kind and the rule that refused it.
//
// Sec-Fetch-Site decides whenever it is there, since only a browser's own
// knowledge of where the click began is behind it: it holds behind a proxy
// that rewrites Host, where Origin and Host differ. Without it (no browser
// sends fetch metadata over plain HTTP; Firefox 70 to 89 sent Origin
// without it over HTTPS too; see docs/design/ask.md#telling-a-click-from-a-robot)
// the Origin must be the page's address.
func fromPage(r *classify.Request) (Kind, string) {
	if r.SecFetchSite != "" {
		switch {
		case !strings.EqualFold(r.SecFetchSite, "same-origin"):
			return OtherAddress, "a click the browser says came from another address"
		case sendsFetchUser(r.UserAgent) && r.SecFetchUser != "?1":
			return OldBrowser, "a click without Sec-Fetch-User from a browser that marks a person's clicks"
		}
		return Wake, ""
	}
	switch {
	case r.Origin == "":
		return OldBrowser, "a click with neither fetch metadata nor Origin"
	case !originIsHost(r.Origin, r.Host):
		return OtherAddress, "a click whose Origin is not the page's address"
	}
	return Wake, ""
}

// sendsFetchUser reports whether ua is a browser that sends Sec-Fetch-User:
// ?1 on every navigation a person starts, whenever it sends fetch metadata:
// Chrome, Edge and other Chromium browsers, and Firefox (from 90, the
// version that sends fetch metadata at all). Safari and every browser on
// iOS (all WebKit, whatever they call themselves: CriOS, FxiOS and EdgiOS
// name neither Chrome/ nor Firefox/) never send it, so their clicks are
// judged by the rest.
func sendsFetchUser(ua string) bool {
	if !strings.Contains(ua, "Chrome/") && !strings.Contains(ua, "Firefox/") && !strings.Contains(ua, "Chromium/") {
		return false
	}
	i := strings.Index(ua, "iP") // iPhone, iPad, iPod
	return i < 0 || (!strings.HasPrefix(ua[i:], "iPhone") && !strings.HasPrefix(ua[i:], "iPad") && !strings.HasPrefix(ua[i:], "iPod"))
}

// originIsHost reports whether origin (an Origin header) names the address
// host (a Host header) was sent to: http:// or https://, then the same host
// (ignoring ASCII case) and the same port, a missing port meaning the
// scheme's default on both sides. Both schemes count: behind a
// TLS-terminating proxy the doorman sees plain HTTP for an https:// page.
// "null", a path, user info or any other scheme never matches.
func originIsHost(origin, host string) bool {
	scheme, rest, ok := strings.Cut(origin, "://")
	if !ok || rest == "" || strings.ContainsAny(rest, "/?#@\\ \t") {
		return false
	}
	var port string
	switch {
	case strings.EqualFold(scheme, "http"):
		port = "80"
	case strings.EqualFold(scheme, "https"):
		port = "443"
	default:
		return false
	}
	oh, op := splitHostPort(rest, port)
	hh, hp := splitHostPort(host, port)
	return oh != "" && op == hp && strings.EqualFold(oh, hh)
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port", the
// port defaulting to def.
func splitHostPort(hp, def string) (host, port string) {
	i := strings.LastIndexByte(hp, ':')
	if i < 0 || strings.LastIndexByte(hp, ']') > i {
		return hp, def
	}
	if p := hp[i+1:]; p != "" {
		return hp[:i], p
	}
	return hp[:i], def
}
