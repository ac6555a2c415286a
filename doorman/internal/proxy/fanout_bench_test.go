package proxy

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"napwake.dev/doorman/internal/tools/firstbyte"
)

// BenchmarkPassHeldOn measures one wake of 256 held callers in this
// process: from the endpoints table showing a Ready pod to every caller's
// first byte at the stand-in pod's socket. The hold before and the hang-up
// after are not timed. Run with -cpuprofile to see where a wake goes.
func BenchmarkPassHeldOn(b *testing.B) {
	const held = 256
	cfg := testConfig()
	l := cfg.Limits
	l.HeldPerWorkload, l.HeldPerSource, l.HeldPerSourceWorkload = l.Held, l.Held, l.Held
	cfg.Limits = l
	w := testWorkload()
	w.Phase = "Resuming"
	h := newHarness(b, cfg, w)
	req := []byte("GET / HTTP/1.1\r\nHost: api\r\n\r\n")
	var p99 time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		conns := make([]*net.TCPConn, 0, held)
		for range held {
			c := h.dial()
			_, _ = c.Write(req)
			conns = append(conns, c)
		}
		wait(b, "every caller held", func() bool { return h.held() == held })
		rec := firstbyte.New(held)
		pod, err := rec.Listen("127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		h.table.SetEndpoints(h.route.Key(), []netip.AddrPort{netip.MustParseAddrPort(pod.Addr().String())})
		if err := rec.Wait(held, 10*time.Second); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_, a99, _ := rec.KernelPercentiles(t0)
		p99 = max(p99, a99)
		h.table.SetEndpoints(h.route.Key(), nil)
		for _, c := range conns {
			_ = c.Close()
		}
		_ = pod.Close()
		wait(b, "every connection gone", func() bool {
			h.srv.mu.Lock()
			defer h.srv.mu.Unlock()
			return len(h.srv.conns) == 0
		})
		b.StartTimer()
	}
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "worst-p99-ms")
}
