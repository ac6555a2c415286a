// Package page renders every answer the doorman itself gives on HTTP: the
// waking-up page browsers get, the probe 503, Google's health check 200,
// the hidden-file 404 and, for workloads that ask before waking, the asleep
// page with its Wake it button (asleep.go) and the 503 everything else gets.
// Each is a complete HTTP/1.1 response with Connection: close. What a
// request gets is decided elsewhere (packages classify and ask); the
// doorman renders the answer here and writes it.
//
// Nothing here names a namespace, workload or Service: the pages give
// nothing away to whoever reaches them.
package page

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"
)

// style is the page's only style; the CSP allows exactly it, by hash.
const style = `body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;font:16px/1.5 system-ui,sans-serif;background:#f6f7f9;color:#1d2330}main{max-width:36rem;padding:2rem;text-align:center}h1{font-size:1.4rem;margin:.5rem 0}.addr{font-family:ui-monospace,monospace;word-break:break-all;color:#3a4a6b}.dot{display:inline-block;width:.8rem;height:.8rem;border-radius:50%;background:#f0a020;animation:p 1.2s infinite alternate}@keyframes p{to{opacity:.3}}p{color:#555}`

// icon is the tab icon, drawn in the page so browsers don't ask for /favicon.ico.
const icon = `data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Ccircle cx='8' cy='8' r='7' fill='%23f0a020'/%3E%3Cpath d='M5 8h6' stroke='white' stroke-width='2'/%3E%3C/svg%3E`

// CSP is the waking-up page's Content-Security-Policy: its own style and no
// script, images only from data:, no frames, forms or base changes.
var CSP = "default-src 'none'; style-src 'sha256-" + hashOf(style) + "'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// RefreshSeconds is how often the waking-up page reloads.
const RefreshSeconds = 3

// maxShown bounds the address shown, so a huge target makes no huge page.
const maxShown = 256

// Waking describes one waking-up page.
type Waking struct {
	// Host and Path are the address the person opened.
	Host, Path string
	// Head: answer a HEAD, headers only.
	Head bool
	// Starting is how long the workload has been Resuming; nil before that.
	Starting *time.Duration
}

// Render returns the complete 503 response.
func (w Waking) Render() []byte {
	addr := w.Host + w.Path
	if len(addr) > maxShown {
		addr = addr[:maxShown] + "…"
	}
	status := "Starting up…"
	if w.Starting != nil {
		status = fmt.Sprintf("Starting for %d s…", int(w.Starting.Round(time.Second)/time.Second))
	}
	body := `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
		`<meta http-equiv="refresh" content="` + strconv.Itoa(RefreshSeconds) + `">` +
		`<meta name="robots" content="noindex"><meta name="viewport" content="width=device-width,initial-scale=1">` +
		`<title>Waking up</title><link rel="icon" href="` + icon + `"><style>` + style + `</style></head>` +
		`<body><main><span class="dot"></span><h1>This environment is waking up</h1>` +
		`<p class="addr">` + html.EscapeString(strings.ToValidUTF8(addr, "\uFFFD")) + `</p>` +
		`<p>` + status + ` This page reloads every ` + strconv.Itoa(RefreshSeconds) + ` seconds and opens the app as soon as it is ready.</p>` +
		`</main></body></html>`
	return response(503, "Service Unavailable", []string{
		"Content-Type: text/html; charset=utf-8",
		"Cache-Control: no-store",
		"Retry-After: " + strconv.Itoa(RefreshSeconds),
		"X-Robots-Tag: noindex",
		"Content-Security-Policy: " + CSP,
		"X-Content-Type-Options: nosniff",
		"Referrer-Policy: same-origin",
	}, body, w.Head)
}

// Probe is the answer to a known probe, scraper or monitor: 503, wakes nothing.
func Probe(head bool) []byte {
	return response(503, "Service Unavailable", []string{"Cache-Control: no-store"}, "", head)
}

// GoogleHC is the answer to Google Cloud's load balancer health check.
func GoogleHC(head bool) []byte {
	return response(200, "OK", []string{"Cache-Control: no-store"}, "", head)
}

// NotFound is the answer to a request for a hidden file.
func NotFound(head bool) []byte {
	return response(404, "Not Found", []string{"Cache-Control: no-store"}, "", head)
}

// asleepText says the workload is asleep and how to wake it.
const asleepText = "This environment is asleep. Open it in a browser and press Wake it, or someone with access to the cluster can wake it with `kubectl napwake wake`."

// Asleep is the 503 a workload that asks before waking gives anything but
// a person's browser: JSON for a client that asks for it, else plain text.
func Asleep(json, head bool) []byte {
	hdr := []string{"Cache-Control: no-store", "Retry-After: 300", "X-Robots-Tag: noindex"}
	if json {
		return response(503, "Service Unavailable", append(hdr, "Content-Type: application/json"),
			`{"status":"asleep","message":"`+strings.ReplaceAll(asleepText, "`", "'")+`"}`+"\n", head)
	}
	return response(503, "Service Unavailable", append(hdr, "Content-Type: text/plain; charset=utf-8"), asleepText+"\n", head)
}

// Paused is the 503 a workload held paused by napwake.dev/pause-until
// gives every HTTP caller, browsers included: nothing but a wake from the
// cluster wakes it before until, so no button is offered. Retry-After is
// the time left (at least a minute); JSON for a client that asks for it.
func Paused(until, now time.Time, json, head bool) []byte {
	wait := max(int(until.Sub(now)/time.Second), 60)
	text := "This environment is paused until " + until.UTC().Format(time.RFC3339) +
		". Someone with access to the cluster can wake it sooner with `kubectl napwake wake`."
	hdr := []string{"Cache-Control: no-store", "Retry-After: " + strconv.Itoa(wait), "X-Robots-Tag: noindex"}
	if json {
		return response(503, "Service Unavailable", append(hdr, "Content-Type: application/json"),
			`{"status":"paused","until":"`+until.UTC().Format(time.RFC3339)+`","message":"`+strings.ReplaceAll(text, "`", "'")+`"}`+"\n", head)
	}
	return response(503, "Service Unavailable", append(hdr, "Content-Type: text/plain; charset=utf-8"), text+"\n", head)
}

func response(code int, reason string, headers []string, body string, head bool) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", code, reason)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	if !head {
		b.WriteString(body)
	}
	return []byte(b.String())
}
