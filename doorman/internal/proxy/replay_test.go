package proxy

import (
	"bytes"
	"testing"
	"time"

	"napwake.dev/doorman/internal/classify"
)

// FuzzReplay: whatever a held caller sends, split anywhere, the pod must
// receive exactly those bytes, in order, once it is Ready; nothing lost,
// added or reordered.
func FuzzReplay(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "\x16\x03\x01\x00\xa5\x01", "POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"*1\r\n$4\r\nPING\r\n", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "GET / HTTP/1.1\r\nUser-Agent: kube-probe/1\r\n\r\n",
	} {
		f.Add([]byte(s), uint16(3))
	}
	f.Add(bytes.Repeat([]byte("z"), 20<<10), uint16(9000))
	cfg := testConfig()
	cfg.Silence = 20 * time.Millisecond
	w := testWorkload()
	w.Phase = "Resuming" // already waking: no wake patches needed
	w.MaxWait = time.Minute
	h := newHarness(f, cfg, w)
	b := newBackend(f)
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		if len(data) == 0 || len(data) > 64<<10 {
			return
		}
		if k := classify.Classify(data, true, classify.Options{Page: true}).Kind; k.Answered() {
			// Answered, not held, while no pod is Ready: nothing to replay.
			// Re-classify the first part too, as the doorman may decide on it.
			return
		}
		cut := int(split) % (len(data) + 1)
		if k := classify.Classify(data[:cut], false, classify.Options{Page: true}).Kind; k.Answered() {
			return
		}
		h.t = t
		h.table.SetEndpoints(h.route.Key(), nil)
		n := b.accepted()
		c := h.dial()
		defer c.Close()
		_, _ = c.Write(data[:cut])
		wait(t, "held", func() bool { return h.held() == 1 })
		_, _ = c.Write(data[cut:])
		h.ready(b)
		wait(t, "the replay", func() bool { return len(b.received(n)) >= len(data) })
		if got := b.received(n); !bytes.Equal(got, data) {
			t.Fatalf("pod got %q, want %q", got, data)
		}
		_ = c.Close()
		wait(t, "the connection to end", func() bool { return h.held() == 0 && b.accepted() == n+1 })
	})
}
