package ask

import (
	"testing"
	"time"

	"napwake.dev/doorman/internal/classify"
	"napwake.dev/doorman/internal/page"
)

// BenchmarkAskAgainstTheWakingPage measures, in one run and interleaved in
// small blocks so both see the same machine, what Ask costs a person's
// click against what the waking-up page costs today: rendering the asleep
// page with a fresh token plus judging that page's click (its form read,
// its token verified), against page.Waking.Render. Both paths classify the
// request first (ClassifyHead reads the head Judge takes, at Classify's
// cost), so that is left out of both. It reports asleep+click/waking; the
// target is at most 1.
//
//	go test -run '^$' -bench AskAgainstTheWakingPage -count 6 ./internal/ask/
func BenchmarkAskAgainstTheWakingPage(b *testing.B) {
	_, ring, tok := fixture(b)
	raw := []byte(click(tok, chromeHTTPS))
	r, _ := headOf(raw)
	starting := 14 * time.Second
	waking := page.Waking{Host: host, Path: "/pr/42", Starting: &starting}
	asleepAndClick := func() {
		signer, _ := ring.Signer(t0)
		out := page.AsleepPage{Host: host, Path: "/pr/42", Token: Issue(signer, workload, pausedA, t0)}.Render()
		v := Judge(&Input{Req: &r, Body: raw[r.HeadLen:], Workload: workload, PausedAt: pausedA, Ring: ring, Now: t0})
		if v.Kind != Wake || len(out) == 0 {
			b.Fatalf("the click was judged %v", v.Kind)
		}
	}
	const block = 8
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

// BenchmarkAskParts measures each part alone, to see where the cost goes;
// "classify" is the head's reading both paths share.
func BenchmarkAskParts(b *testing.B) {
	k, ring, tok := fixture(b)
	raw := []byte(click(tok, chromeHTTPS))
	r, _ := headOf(raw)
	for _, part := range []struct {
		name string
		f    func()
	}{
		{"issue", func() { Issue(k, workload, pausedA, t0) }},
		{"render", func() { page.AsleepPage{Host: host, Path: "/pr/42", Token: tok}.Render() }},
		{"judge", func() {
			Judge(&Input{Req: &r, Body: raw[r.HeadLen:], Workload: workload, PausedAt: pausedA, Ring: ring, Now: t0})
		}},
		{"verify", func() { Verify(tok, ring, workload, pausedA, t0) }},
		{"classify", func() { classify.ClassifyHead(raw, true, classify.Options{Page: true, Ask: true}) }},
	} {
		b.Run(part.name, func(b *testing.B) {
			for b.Loop() {
				part.f()
			}
		})
	}
}
