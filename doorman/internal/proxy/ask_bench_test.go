package proxy

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAskPathAgainstTheWakingPage measures, through the doorman's
// sockets in one run, what a workload that asks costs against what the
// waking-up page costs a workload that does not: a person's browser opening
// the page (the asleep page, with a fresh token) and its click on Wake it
// (form read, judged, stamped, the waking-up page), against a browser
// opening a page of a workload with wake.mode Request (the waking-up page,
// and its wake). Each is a fresh connection, request written, answer read to
// the close, interleaved in small blocks so both see the same machine. It
// reports each path's time per request and (page load + click) / 2 over
// the waking-up page: the target is at most 1.
//
//	go test -run '^$' -bench AskPathAgainstTheWakingPage -count 6 ./internal/proxy/
func BenchmarkAskPathAgainstTheWakingPage(b *testing.B) {
	p := newAskPods(b, 1, askWorkload())[0]
	p.rec.lastClick.always = true
	peer := newHarness(b, testConfig(), testWorkload()) // wake.mode Request
	peerPod := askPod{harness: peer}
	load := pageLoad(askHost, chromeUA, "Sec-Fetch-Mode: navigate\r\n")
	const block = 4
	var asking, waking time.Duration
	for b.Loop() {
		clicks := make([]string, block)
		for i := range clicks {
			clicks[i] = post(clickForm(p.token()), chromeUA, overHTTPS...)
		}
		start := time.Now()
		for i := range block {
			if r := p.exchange(b, load); !strings.HasPrefix(r, "HTTP/1.1 200") {
				b.Fatalf("a page load got %q", status(r))
			}
			if r := p.exchange(b, clicks[i]); !strings.Contains(r, "waking up") {
				b.Fatalf("a click got %q", status(r))
			}
		}
		mid := time.Now()
		for range block {
			if r := peerPod.exchange(b, load); !strings.Contains(r, "waking up") {
				b.Fatalf("the peer got %q", status(r))
			}
		}
		asking += mid.Sub(start)
		waking += time.Since(mid)
	}
	n := float64(b.N * block)
	b.ReportMetric(float64(asking.Nanoseconds())/n/2, "ask-ns/req")
	b.ReportMetric(float64(waking.Nanoseconds())/n, "waking-ns/req")
	b.ReportMetric(float64(asking)/2/float64(waking), "ask/waking")
}

// TestAThousandClicksASecondFromOneSourceWakeOnce sends 1,000 fresh clicks
// within about a second, from one source address, spread over two doorman
// pods sharing one ManagedWorkload: exactly one wakes it, and every other
// gets the 429 page. (That the minute then holds, whichever pod, is
// TestAClickWithinAMinuteGets429WhicheverPodItReaches here and
// TestAClickWakesOnceAMinuteWhicheverPodItReaches against an API server.)
func TestAThousandClicksASecondFromOneSourceWakeOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 connections")
	}
	pods := newAskPods(t, 2, askWorkload())
	const clicks, workers = 1000, 16
	var woke, tooSoon, other atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < clicks; i += workers {
				// Paced to 1,000 a second overall.
				if d := time.Until(start.Add(time.Duration(i) * time.Millisecond)); d > 0 {
					time.Sleep(d) // pacing the load, not waiting for an event
				}
				p := pods[i%2]
				c := p.dial()
				_, _ = c.Write([]byte(post(clickForm(p.token()), chromeUA, overHTTPS...)))
				r := string(readAll(t, c))
				_ = c.Close()
				switch {
				case strings.Contains(r, "waking up"):
					woke.Add(1)
				case strings.HasPrefix(r, "HTTP/1.1 429"):
					tooSoon.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("%d clicks in %v (%.0f a second): %d woke, %d got 429, %d else", clicks, elapsed.Round(time.Millisecond),
		clicks/elapsed.Seconds(), woke.Load(), tooSoon.Load(), other.Load())
	if woke.Load() != 1 || tooSoon.Load() != clicks-1 || other.Load() != 0 {
		t.Fatalf("%d woke, %d got 429, %d else: want 1 and %d", woke.Load(), tooSoon.Load(), other.Load(), clicks-1)
	}
	if n := pods[0].rec.lastClick.count(); n != 1 {
		t.Fatalf("%d wakes stamped, want 1", n)
	}
}
