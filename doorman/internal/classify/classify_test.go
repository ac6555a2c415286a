package classify

import (
	"strings"
	"testing"
)

const chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36"

func req(method, target string, hdrs ...string) string {
	return method + " " + target + " HTTP/1.1\r\nHost: pr-412.preview.example.dev\r\n" + strings.Join(hdrs, "") + "\r\n"
}

func ua(s string) string { return "User-Agent: " + s + "\r\n" }

func TestClassify(t *testing.T) {
	request := Options{Page: true}
	noPage := Options{Page: false}
	ask := Options{Page: true, Ask: true}
	extra := Options{Page: true, ExtraAgents: []string{"MyCorpMonitor/", "status-checker"}}
	tlsHello := "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"
	cases := []struct {
		name  string
		in    string
		final bool
		o     Options
		want  Kind
	}{
		// What wakes a workload, and what doesn't.
		{"an HTTP request from an ordinary client is held and wakes", req("GET", "/api", ua("curl/8.5.0")), false, request, Hold},
		{"a TLS handshake is held and wakes", tlsHello, false, request, Hold},
		{"a Postgres startup message is held and wakes", "\x00\x00\x00\x08\x04\xd2\x16\x2f", false, request, Hold},
		{"connecting and sending nothing waits for more", "", false, request, NeedMore},
		{"sending nothing for 3 seconds is held and wakes (server speaks first)", "", true, request, Hold},
		{"a GET from kube-probe gets the probe 503", req("GET", "/healthz", ua("kube-probe/1.30")), false, request, Probe},
		{"a HEAD from Prometheus gets the probe 503", req("HEAD", "/metrics", ua("Prometheus/2.53.0")), false, request, Probe},
		{"a GET from Blackbox Exporter gets the probe 503", req("GET", "/", ua("Blackbox Exporter/0.25.0")), false, request, Probe},
		{"a GET from vm_promscrape gets the probe 503", req("GET", "/", ua("vm_promscrape")), false, request, Probe},
		{"a GET from GrafanaAgent gets the probe 503", req("GET", "/", ua("GrafanaAgent/v0.40")), false, request, Probe},
		{"a GET from Alloy gets the probe 503", req("GET", "/", ua("Alloy/v1.4")), false, request, Probe},
		{"a GET from OpenTelemetry Collector gets the probe 503", req("GET", "/", ua("OpenTelemetry Collector Contrib/0.110")), false, request, Probe},
		{"a GET from otelcol gets the probe 503", req("GET", "/", ua("otelcol-contrib/0.110")), false, request, Probe},
		{"a GET from Datadog Agent gets the probe 503", req("GET", "/", ua("Datadog Agent/7.57")), false, request, Probe},
		{"a GET from Datadog Synthetics gets the probe 503", req("GET", "/", ua("Datadog/Synthetics")), false, request, Probe},
		{"a GET from the ELB health checker gets the probe 503", req("GET", "/", ua("ELB-HealthChecker/2.0")), false, request, Probe},
		{"a GET from Route53 health checks gets the probe 503", req("GET", "/", ua("Amazon-Route53-Health-Check-Service (ref 1)")), false, request, Probe},
		{"a GET from Stackdriver uptime checks gets the probe 503", req("GET", "/", ua("GoogleStackdriverMonitoring-UptimeChecks(https://cloud.google.com/monitoring)")), false, request, Probe},
		{"a GET from Envoy's health checker gets the probe 503", req("GET", "/", ua("Envoy/HC")), false, request, Probe},
		{"a GET from UptimeRobot gets the probe 503", req("GET", "/", ua("Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)")), false, request, Probe},
		{"a GET from Pingdom gets the probe 503", req("GET", "/", ua("Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)")), false, request, Probe},
		{"a GET from NewRelicPinger gets the probe 503", req("GET", "/", ua("NewRelicPinger/1.0 (12345)")), false, request, Probe},
		{"a GET from Uptime Kuma gets the probe 503", req("GET", "/", ua("Uptime-Kuma/1.23.13")), false, request, Probe},
		{"a GET from Gatus gets the probe 503", req("GET", "/", ua("Gatus/1.0")), false, request, Probe},
		{"a GET from GoogleHC gets 200", req("GET", "/", ua("GoogleHC/1.0")), false, request, GoogleHC},
		{"a HEAD from GoogleHC gets 200", req("HEAD", "/healthz", ua("GoogleHC/1.0")), false, request, GoogleHC},
		{"a POST from GoogleHC is held", req("POST", "/", ua("GoogleHC/1.0")), false, request, Hold},
		{"a GET from a user-added prefix gets the probe 503", req("GET", "/", ua("MyCorpMonitor/3.1")), false, extra, Probe},
		{"a GET from a second user-added prefix gets the probe 503", req("GET", "/", ua("status-checker v2")), false, extra, Probe},
		{"a user-added prefix without the option is held", req("GET", "/", ua("MyCorpMonitor/3.1")), false, request, Hold},
		{"a Prometheus remote write POST is held and wakes", req("POST", "/api/v1/write", ua("Prometheus/2.53.0")), false, request, Hold},
		{"an Alertmanager POST is held and wakes", req("POST", "/hook", ua("Alertmanager/0.27.0")), false, request, Hold},
		{"a PUT from kube-probe is held", req("PUT", "/", ua("kube-probe/1.30")), false, request, Hold},
		{"after (compatible; a user-added prefix is a probe", req("GET", "/", ua("Mozilla/5.0 (compatible; MyCorpMonitor/3.1)")), false, extra, Probe},
		{"after (compatible; a built-in prefix is a probe", req("GET", "/", ua("Mozilla/5.0 (compatible; kube-probe/1.30)")), false, request, Probe},
		{"after (compatible; with no space a built-in prefix is a probe", req("GET", "/", ua("Mozilla/5.0 (compatible;Prometheus/2.0)")), false, request, Probe},
		{"case variants of a probe agent are probes", req("GET", "/", ua("KUBE-PROBE/1.30")), false, request, Probe},
		{"a mixed-case header name still carries the agent", "GET / HTTP/1.1\r\nuSeR-aGeNt: kube-probe/1.30\r\n\r\n", false, request, Probe},
		{"a hidden .env is 404", req("GET", "/.env", ua("curl/8")), false, request, HiddenFile},
		{"a hidden .git/config is 404", req("GET", "/.git/config", ua("curl/8")), false, request, HiddenFile},
		{"a hidden .aws/credentials is 404", req("GET", "/.aws/credentials"), false, request, HiddenFile},
		{"a hidden part deeper in the path is 404", req("GET", "/app/static/.DS_Store"), false, request, HiddenFile},
		{"a percent-encoded hidden part is 404", req("GET", "/%2eenv"), false, request, HiddenFile},
		{"a POST to a hidden file is 404", req("POST", "/.env"), false, request, HiddenFile},
		{"a hidden file from a probe is 404", req("GET", "/.env", ua("kube-probe/1.30")), false, request, HiddenFile},
		{"a hidden file in an absolute-form target is 404", req("GET", "http://pr-412.example.dev/.git/HEAD"), false, request, HiddenFile},
		{"a hidden file behind a query is not seen in the query", req("GET", "/search?q=.env"), false, request, Hold},
		{"/.well-known/ is not hidden", req("GET", "/.well-known/acme-challenge/abc"), false, request, Hold},
		{"a hidden part under /.well-known/ is 404", req("GET", "/.well-known/../.env"), false, request, HiddenFile},
		{"a hidden file is 404 in Ask mode too", req("GET", "/.env"), false, ask, HiddenFile},
		// Browsers.
		{"a browser navigation gets the waking-up page", req("GET", "/", ua(chrome), "Sec-Fetch-Mode: navigate\r\n"), false, request, Browser},
		{"an older browser asking for HTML gets the waking-up page", req("GET", "/", ua(chrome), "Accept: text/html,application/xhtml+xml\r\n"), false, request, Browser},
		{"a browser HEAD navigation gets the waking-up page", req("HEAD", "/", ua(chrome), "Sec-Fetch-Mode: navigate\r\n"), false, request, Browser},
		{"with page: false a browser is held", req("GET", "/", ua(chrome), "Sec-Fetch-Mode: navigate\r\n"), false, noPage, Hold},
		{"a browser's fetch is held", req("GET", "/api", ua(chrome), "Sec-Fetch-Mode: cors\r\nAccept: text/html\r\n"), false, request, Hold},
		{"a browser form post is held", req("POST", "/login", ua(chrome), "Sec-Fetch-Mode: navigate\r\n"), false, request, Hold},
		{"a WebSocket from a browser is held", req("GET", "/ws", ua(chrome), "Upgrade: websocket\r\nConnection: Upgrade\r\nAccept: text/html\r\n"), false, request, Hold},
		{"Googlebot posing as Mozilla is held, not shown the page", req("GET", "/", ua("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"), "Accept: text/html\r\n"), false, request, Hold},
		{"facebookexternalhit is held", req("GET", "/", ua("facebookexternalhit/1.1"), "Accept: text/html\r\n"), false, request, Hold},
		{"a headless browser is held", req("GET", "/", ua("Mozilla/5.0 HeadlessChrome/120"), "Sec-Fetch-Mode: navigate\r\n"), false, request, Hold},
		{"curl asking for HTML is held", req("GET", "/", ua("curl/8"), "Accept: text/html\r\n"), false, request, Hold},
		// Ask mode, for now.
		{"in Ask mode an HTTP request gets the asleep 503", req("GET", "/api", ua("curl/8")), false, ask, Asleep},
		{"in Ask mode a browser gets the asleep 503 (no asleep page yet)", req("GET", "/", ua(chrome), "Sec-Fetch-Mode: navigate\r\n"), false, ask, Asleep},
		{"in Ask mode a probe still gets the probe 503", req("GET", "/", ua("kube-probe/1.30")), false, ask, Probe},
		{"in Ask mode GoogleHC still gets 200", req("GET", "/", ua("GoogleHC/1.0")), false, ask, GoogleHC},
		{"in Ask mode TLS is closed with nothing sent", tlsHello, false, ask, Refuse},
		{"in Ask mode silence is closed with nothing sent", "", true, ask, Refuse},
		// Bad input (docs/design/doorman.md#bad-input).
		{"one byte of a method waits for more", "G", false, request, NeedMore},
		{"one byte then silence is held", "G", true, request, Hold},
		{"a request line without its end waits", "GET /index.html HT", false, request, NeedMore},
		{"headers without the blank line wait", "GET / HTTP/1.1\r\nHost: x\r\n", false, request, NeedMore},
		{"headers without the blank line decide when final", "GET / HTTP/1.1\r\nUser-Agent: kube-probe/1.30\r\n", true, request, Probe},
		{"exactly 16 KiB without a line end is held", "GET /" + strings.Repeat("a", MaxHeaderBytes-5), false, request, Hold},
		{"16 KiB + 1 without a line end is held", "GET /" + strings.Repeat("a", MaxHeaderBytes-4), false, request, Hold},
		{"an 8 KiB User-Agent of a probe is a probe", req("GET", "/", ua("kube-probe/"+strings.Repeat("x", 8<<10))), false, request, Probe},
		{"a probe whose agent starts after 16 KiB is held", "GET / HTTP/1.1\r\nX-Pad: " + strings.Repeat("p", MaxHeaderBytes) + "\r\nUser-Agent: kube-probe/1\r\n\r\n", false, request, Hold},
		{"a browser's navigation decides from the first 16 KiB before large cookies", "GET / HTTP/1.1\r\nUser-Agent: " + chrome + "\r\nSec-Fetch-Mode: navigate\r\nCookie: " + strings.Repeat("c", MaxHeaderBytes) + "\r\n\r\n", false, request, Browser},
		{"\\n-only line ends work", "GET / HTTP/1.1\nUser-Agent: kube-probe/1.30\n\n", false, request, Probe},
		{"NUL bytes are held", "\x00\x00\x00\x00", false, request, Hold},
		{"NUL inside a method is not HTTP", "GE\x00T / HTTP/1.1\r\n\r\n", false, request, Hold},
		{"invalid UTF-8 in a User-Agent does not panic and is held", req("GET", "/", ua("\xff\xfe(compatible;\xff")), false, request, Hold},
		{"a header without a colon is skipped", "GET / HTTP/1.1\r\nnonsense\r\nUser-Agent: kube-probe/1\r\n\r\n", false, request, Probe},
		{"the HTTP/2 preface is held", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false, request, Hold},
		{"an SSH banner is held", "SSH-2.0-OpenSSH_9.6\r\n", false, request, Hold},
		{"a PROXY v1 header is held", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\nGET / HTTP/1.1\r\nUser-Agent: kube-probe/1\r\n\r\n", false, request, Hold},
		{"a PROXY v2 header is held", "\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c", false, request, Hold},
		{"a Redis PING is held", "*1\r\n$4\r\nPING\r\n", false, request, Hold},
		{"an inline Redis PING waits then is held", "PING\r\n", false, request, Hold},
		{"HTTP/1.0 without Host from a probe is a probe", "GET / HTTP/1.0\r\nUser-Agent: kube-probe/1\r\n\r\n", false, request, Probe},
		{"an absolute-form target is classified by its path", req("GET", "http://x/healthz", ua("kube-probe/1")), false, request, Probe},
		{"CONNECT is held", req("CONNECT", "example.com:443"), false, request, Hold},
		{"OPTIONS * is held", req("OPTIONS", "*"), false, request, Hold},
		{"Expect: 100-continue is held", req("POST", "/upload", "Expect: 100-continue\r\nContent-Length: 10\r\n"), false, request, Hold},
		{"pipelined requests decide on the first", req("GET", "/", ua("kube-probe/1")) + req("GET", "/.env"), false, request, Probe},
		{"Content-Length with Transfer-Encoding is held", req("POST", "/", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n") + "0\r\n\r\n", false, request, Hold},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify([]byte(tc.in), tc.final, tc.o)
			if got.Kind != tc.want {
				t.Fatalf("Classify(%q) = %v, want %v", truncate(tc.in), got.Kind, tc.want)
			}
		})
	}
}

func TestClassifyReportsWhatThePageShows(t *testing.T) {
	got := Classify([]byte(req("GET", "/pr/42?token=secret", ua(chrome), "Sec-Fetch-Mode: navigate\r\nAccept: application/json\r\n")), false, Options{Page: true})
	if got.Host != "pr-412.preview.example.dev" || got.Path != "/pr/42" || got.Method != "GET" || !got.WantsJSON {
		t.Fatalf("got %+v, want host pr-412.preview.example.dev, path /pr/42 without the query, method GET, WantsJSON", got)
	}
}

func TestKindProperties(t *testing.T) {
	for k := NeedMore; k <= Refuse; k++ {
		wakes := k == Hold || k == Browser
		if k.Wakes() != wakes {
			t.Errorf("%v.Wakes() = %v, want %v", k, k.Wakes(), wakes)
		}
		if k.TurnedAway() && k.Wakes() {
			t.Errorf("%v both wakes and is turned away", k)
		}
	}
	if Probe.TurnedAway() || GoogleHC.TurnedAway() || Browser.TurnedAway() {
		t.Error("probes, health checks and browsers must not count as turned away")
	}
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// FuzzClassify: Classify must never panic, never ask for more bytes once it
// has 16 KiB or final is set, never decide differently on bytes past 16 KiB,
// and never wake (Hold/Browser) in Ask mode.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		req("GET", "/", ua("kube-probe/1.30")), req("GET", "/.env"), req("GET", "/", ua(chrome), "Sec-Fetch-Mode: navigate\r\n"),
		"\x16\x03\x01\x00", "GET / HTTP/1.1\n\n", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "GET /%zz HTTP/1.1\r\n\r\n",
		req("GET", "/", ua("Mozilla/5.0 (compatible;")), "",
	} {
		f.Add([]byte(s), false, true, false)
	}
	f.Fuzz(func(t *testing.T, b []byte, final, page, ask bool) {
		o := Options{Page: page, Ask: ask, ExtraAgents: []string{"MyCorp/"}}
		r := Classify(b, final, o)
		if (final || len(b) >= MaxHeaderBytes) && r.Kind == NeedMore {
			t.Fatalf("NeedMore with final=%v len=%d", final, len(b))
		}
		if ask && r.Kind.Wakes() {
			t.Fatalf("Ask mode woke: %v", r.Kind)
		}
		if !page && r.Kind == Browser {
			t.Fatal("page off but Browser")
		}
		if len(b) > MaxHeaderBytes {
			if r2 := Classify(b[:MaxHeaderBytes], final, o); r2.Kind != r.Kind {
				t.Fatalf("bytes past 16 KiB changed the decision: %v vs %v", r.Kind, r2.Kind)
			}
		}
	})
}
