package ask

import (
	"strings"
	"testing"

	"napwake.dev/doorman/internal/classify"
)

func TestOriginIsHost(t *testing.T) {
	cases := []struct {
		name, origin, host string
		want               bool
	}{
		{"the page's own http:// address matches", "http://" + host, host, true},
		{"the page's own https:// address matches, as behind a TLS-terminating proxy", "https://" + host, host, true},
		{"case does not matter", "HTTP://PR-412.Preview.Example.Dev", host, true},
		{"the same port matches", "http://localhost:8080", "localhost:8080", true},
		{"an explicit default port matches none", "https://" + host, host + ":443", true},
		{"an IPv6 address with its port matches", "http://[::1]:8080", "[::1]:8080", true},
		{"another port does not match", "http://" + host + ":8080", host, false},
		{"port 80 over https does not match", "https://" + host, host + ":80", false},
		{"another subdomain does not match", "http://evil." + host, host, false},
		{"a suffix of the host does not match", "http://preview.example.dev", host, false},
		{"null does not match", "null", host, false},
		{"another scheme does not match", "ftp://" + host, host, false},
		{"a path does not match", "http://" + host + "/", host, false},
		{"user info does not match", "http://a@" + host, host, false},
		{"an empty Host matches nothing", "http://", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := originIsHost(tc.origin, tc.host); got != tc.want {
				t.Fatalf("originIsHost(%q, %q) = %v, want %v", tc.origin, tc.host, got, tc.want)
			}
		})
	}
}

// FuzzFromPage: the fetch metadata and Origin judgement must never panic,
// never say the click came from the page when Sec-Fetch-Site says another
// site, nor without Sec-Fetch-Site unless the Origin, lowered and without
// its scheme's default port, is the Host so lowered; neither fetch metadata
// nor Origin is always the old-browser answer.
func FuzzFromPage(f *testing.F) {
	f.Add("same-origin", "?1", "", host, chrome)
	f.Add("", "", "http://"+host, host, safari)
	f.Add("", "", "https://"+host+":443", host+":443", firefox85)
	f.Add("cross-site", "?1", "http://"+host, host, chrome)
	f.Add("", "", "null", host, chrome)
	f.Add("same-origin", "", "", host, iosChrome)
	f.Fuzz(func(t *testing.T, site, user, origin, hostHeader, agent string) {
		k, _ := fromPage(&classify.Request{SecFetchSite: site, SecFetchUser: user, Origin: origin, Host: hostHeader, UserAgent: agent})
		switch {
		case k != Wake && k != OtherAddress && k != OldBrowser:
			t.Fatalf("kind %v", k)
		case site != "" && k == Wake && !strings.EqualFold(site, "same-origin"):
			t.Fatalf("woke on Sec-Fetch-Site %q", site)
		case site == "" && origin == "" && k != OldBrowser:
			t.Fatalf("neither fetch metadata nor Origin gave %v", k)
		case site == "" && k == Wake && !sameAddress(origin, hostHeader):
			t.Fatalf("woke on Origin %q for Host %q", origin, hostHeader)
		}
	})
}

// sameAddress is the fuzzer's own reading of an Origin against a Host.
func sameAddress(origin, host string) bool {
	o, h := strings.ToLower(origin), strings.ToLower(host)
	for scheme, port := range map[string]string{"http://": ":80", "https://": ":443"} {
		if a, ok := strings.CutPrefix(o, scheme); ok && a != "" {
			norm := func(s string) string { return strings.TrimSuffix(strings.TrimSuffix(s, ":"), port) }
			return norm(a) == norm(h) // an empty port is the default one (RFC 3986 section 6.2.3)
		}
	}
	return false
}
