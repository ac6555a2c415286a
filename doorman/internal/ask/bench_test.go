package ask

import (
	"testing"
	"time"

	"napwake.dev/doorman/internal/classify"
	"napwake.dev/doorman/internal/page"
)

// BenchmarkAskAgainstTheWakingPage measures, in one run and interleaved in
// blocks so both see the same machine, what Ask costs per person against
// what the waking-up page costs today: rendering the asleep page with a
// fresh token plus judging that page's click (its head parsed, its form
// read, its token verified), against page.Waking.Render. It reports the
// ratio as asleep+click/waking; the target is at most 1.
//
//	go test -run '^$' -bench AskAgainstTheWakingPage ./internal/ask/
func BenchmarkAskAgainstTheWakingPage(b *testing.B) {
	k := testKey(b, 1)
	ring := ringOf(b, k)
	raw := []byte(click(Issue(k, workload, pausedA, t0), chromeHTTPS))
	starting := 14 * time.Second
	waking := page.Waking{Host: host, Path: "/pr/42", Starting: &starting}
	asleepAndClick := func() {
		signer, _ := ring.Signer(t0)
		out := page.AsleepPage{Host: host, Path: "/pr/42", Token: Issue(signer, workload, pausedA, t0)}.Render()
		r, _ := classify.ParseRequest(raw)
		v := Judge(&Input{Req: &r, Body: raw[r.HeadLen:], Workload: workload, PausedAt: pausedA, Ring: ring, Now: t0})
		if v.Kind != Wake || len(out) == 0 {
			b.Fatalf("the click was judged %v", v.Kind)
		}
	}
	const block = 32
	var ask, wake time.Duration
	for b.Loop() {
		start := time.Now()
		for range block {
			asleepAndClick()
		}
		mid := time.Now()
		for range block {
			if len(waking.Render()) == 0 {
				b.Fatal("no waking-up page")
			}
		}
		ask += mid.Sub(start)
		wake += time.Since(mid)
	}
	n := float64(b.N * block)
	b.ReportMetric(float64(ask.Nanoseconds())/n, "asleep+click-ns")
	b.ReportMetric(float64(wake.Nanoseconds())/n, "waking-ns")
	b.ReportMetric(float64(ask)/float64(wake), "asleep+click/waking")
}

// BenchmarkAskParts measures each part of the asleep page's cost alone, to
// see where it goes.
func BenchmarkAskParts(b *testing.B) {
	k := testKey(b, 1)
	ring := ringOf(b, k)
	tok := Issue(k, workload, pausedA, t0)
	raw := []byte(click(tok, chromeHTTPS))
	r, _ := classify.ParseRequest(raw)
	b.Run("issue", func(b *testing.B) {
		for b.Loop() {
			Issue(k, workload, pausedA, t0)
		}
	})
	b.Run("render", func(b *testing.B) {
		for b.Loop() {
			page.AsleepPage{Host: host, Path: "/pr/42", Token: tok}.Render()
		}
	})
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			classify.ParseRequest(raw)
		}
	})
	b.Run("judge", func(b *testing.B) {
		for b.Loop() {
			Judge(&Input{Req: &r, Body: raw[r.HeadLen:], Workload: workload, PausedAt: pausedA, Ring: ring, Now: t0})
		}
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			Verify(tok, ring, workload, pausedA, t0)
		}
	})
}
