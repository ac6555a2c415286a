package proxy

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"napwake.dev/doorman/internal/classify"
	"napwake.dev/shared/testnet"
)

// The Limits table at its documented values (DefaultLimits), on real
// sockets: each cap at cap−1, cap and cap+1.

// capHarness is a harness on n workloads' routes, each on its own port,
// with the documented caps and callers held for a minute.
func capHarness(t *testing.T, n int) (*harness, []Route) {
	t.Helper()
	cfg := testConfig()
	cfg.Limits = DefaultLimits()
	w := testWorkload()
	w.MaxWait = time.Minute
	h := newHarness(t, cfg, w)
	routes := []Route{h.route}
	for i := 1; i < n; i++ {
		r := h.route
		r.Workload.Name = "api" + strconv.Itoa(i)
		r.Service = r.Workload.Name
		r.DoormanPort = testnet.FreePort(t)
		routes = append(routes, r)
	}
	if failed := h.srv.SetRoutes(routes); len(failed) > 0 {
		t.Fatalf("SetRoutes: %v", failed)
	}
	return h, routes
}

// caller places the i-th connection of a cap's row: its source address
// (127.0.0.x) and its workload's index.
type caller func(i int) (src string, workload int)

// dialCallers opens connections from to to (exclusive) as place says.
func dialCallers(h *harness, routes []Route, place caller, from, to int) []*net.TCPConn {
	h.t.Helper()
	var cs []*net.TCPConn
	for i := from; i < to; i++ {
		src, w := place(i)
		cs = append(cs, h.dialPort(routes[w].DoormanPort, src))
	}
	return cs
}

func loopback(n int) string { return "127.0.0." + strconv.Itoa(n) }

func TestHeldCapsAtTheirDocumentedValues(t *testing.T) {
	l := DefaultLimits()
	cases := []struct {
		name      string
		cap       string
		max       int
		workloads int
		place     caller
	}{
		{"per source for one workload", CapHeldPerSourceWorkload, l.HeldPerSourceWorkload, 1,
			func(int) (string, int) { return loopback(1), 0 }},
		{"per workload", CapHeldPerWorkload, l.HeldPerWorkload, 1, // 128 from each source; the last from a fresh one
			func(i int) (string, int) { return loopback(1 + i/l.HeldPerSourceWorkload), 0 }},
		{"per source", CapHeldPerSource, l.HeldPerSource, 9, // 128 to each workload; the last to a fresh one
			func(i int) (string, int) { return loopback(1), i / l.HeldPerSourceWorkload }},
		{"per doorman pod", CapHeld, l.Held, 9, // two sources at 128 for each of 8 workloads; the last fresh in both
			func(i int) (string, int) {
				if i == l.Held {
					return loopback(3), 8
				}
				return loopback(1 + i%l.HeldPerWorkload/l.HeldPerSourceWorkload), i / l.HeldPerWorkload
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, routes := capHarness(t, tc.workloads)
			dialCallers(h, routes, tc.place, 0, tc.max-1)
			wait(t, "cap−1 held", func() bool { return h.held() == float64(tc.max-1) })
			dialCallers(h, routes, tc.place, tc.max-1, tc.max)
			wait(t, "cap held", func() bool { return h.held() == float64(tc.max) })
			over := dialCallers(h, routes, tc.place, tc.max, tc.max+1)[0]
			if over != nil && !closedAtOnce(over) {
				t.Fatal("cap+1 was not closed at once")
			}
			if got := h.rejections(tc.cap); got != 1 {
				t.Fatalf("rejections{cap=%s} = %v, want 1", tc.cap, got)
			}
			if got := h.held(); got != float64(tc.max) {
				t.Fatalf("held = %v after cap+1, want the cap %d", got, tc.max)
			}
		})
	}
}

func TestPassingCapsAtTheirDocumentedValues(t *testing.T) {
	l := DefaultLimits()
	cases := []struct {
		name  string
		max   int
		place caller
	}{
		{"per source", l.PassingPerSource, func(int) (string, int) { return loopback(1), 0 }},
		{"per doorman pod", l.Passing, func(i int) (string, int) { return loopback(1 + i/l.PassingPerSource), 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, routes := capHarness(t, 1)
			b := newBackend(t)
			h.ready(b)
			passed := dialCallers(h, routes, tc.place, 0, tc.max-1)
			wait(t, "cap−1 passed", func() bool { return b.accepted() == tc.max-1 })
			passed = append(passed, dialCallers(h, routes, tc.place, tc.max-1, tc.max)...)
			wait(t, "cap passed", func() bool { return b.accepted() == tc.max })
			over := dialCallers(h, routes, tc.place, tc.max, tc.max+1)[0]
			_, _ = over.Write([]byte("cap+1"))
			wait(t, "cap+1 held", func() bool { return h.held() == 1 })
			if b.accepted() != tc.max {
				t.Fatalf("%d passed, want the cap %d", b.accepted(), tc.max)
			}
			_ = passed[0].Close()
			wait(t, "cap+1 passed once a place freed", func() bool { return string(b.received(tc.max)) == "cap+1" })
		})
	}
}

// payload is n bytes a held caller sends: a TLS-like first byte (held as
// any caller, never a browser), then one letter per caller.
func payload(i, n int) []byte {
	p := bytes.Repeat([]byte{byte('a' + i%26)}, n)
	p[0] = 0x16
	return p
}

func TestByteCapsAtTheirDocumentedValues(t *testing.T) {
	l := DefaultLimits()
	full := l.FreeBytes + l.ConnBytes    // one caller at its cap
	callers := func(n, last int) []int { // n−1 callers at their cap, then one sending last
		s := make([]int, n)
		for i := range s {
			s[i] = full
		}
		s[n-1] = last
		return s
	}
	cases := []struct {
		name    string
		sizes   []int // what each caller sends
		counted int   // of the shared budget, once read
	}{
		{"the free bytes, cap−1", []int{l.FreeBytes - 1}, 0},
		{"the free bytes, cap", []int{l.FreeBytes}, 0},
		{"the free bytes, cap+1", []int{l.FreeBytes + 1}, 1},
		{"per connection, cap−1", []int{full - 1}, l.ConnBytes - 1},
		{"per connection, cap", []int{full}, l.ConnBytes},
		{"per connection, cap+1: the byte over waits in the network", []int{full + 1}, l.ConnBytes},
		{"shared, cap−1", callers(l.TotalBytes/l.ConnBytes, full-1), l.TotalBytes - 1},
		{"shared, cap", callers(l.TotalBytes/l.ConnBytes, full), l.TotalBytes},
		{"shared, cap+1: a caller past its free bytes waits", callers(l.TotalBytes/l.ConnBytes+1, l.FreeBytes+1), l.TotalBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := capHarness(t, 1)
			for i, n := range tc.sizes {
				c := h.dial()
				go func() { _, _ = c.Write(payload(i, n)) }() // blocks once the doorman stops reading
			}
			// The shared rows move 32 MiB in and out: under -race on two
			// cores each step takes seconds (0.15 s without it), so their
			// bound is a minute; what they judge is bytes, not speed.
			waitWithin(t, time.Minute, "the budget read", func() bool {
				return h.held() == float64(len(tc.sizes)) && h.srv.bytesFree() == l.TotalBytes-tc.counted
			})
			b := newBackend(t)
			h.ready(b)
			sent := 0
			for _, n := range tc.sizes {
				sent += n
			}
			waitWithin(t, time.Minute, "every byte at the pod", func() bool { return b.total() == sent })
			got := map[string]bool{}
			for j := 0; j < b.accepted(); j++ {
				got[string(b.received(j))] = true
			}
			for i, n := range tc.sizes {
				if !got[string(payload(i, n))] {
					t.Fatalf("caller %d's %d bytes did not reach the pod byte-exact", i, n)
				}
			}
			waitWithin(t, time.Minute, "the budget given back", func() bool { return h.srv.bytesFree() == l.TotalBytes })
		})
	}
}

// total is how many bytes the pod got, over every connection.
func (b *backend) total() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, g := range b.got {
		n += g.Len()
	}
	return n
}

// browserAt is a browser's request whose Sec-Fetch-Mode line ends n bytes
// in, a long cookie before it.
func browserAt(n int) []byte {
	head := "GET / HTTP/1.1\r\nHost: api\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Chrome/130.0\r\nCookie: "
	line := "Sec-Fetch-Mode: navigate\r\n"
	return []byte(head + strings.Repeat("c", n-len(head)-2-len(line)) + "\r\n" + line + "Accept: */*\r\n\r\n")
}

// The first 16 KiB of headers decide: a browser's Sec-Fetch-Mode within
// them gets the waking-up page; one past them is held as any caller, and
// passed on byte-exact.
func TestTheFirst16KiBOfHeadersDecide(t *testing.T) {
	for _, tc := range []struct {
		n    int
		page bool
	}{{classify.MaxHeaderBytes - 1, true}, {classify.MaxHeaderBytes, true}, {classify.MaxHeaderBytes + 1, false}} {
		t.Run(strconv.Itoa(tc.n), func(t *testing.T) {
			h, _ := capHarness(t, 1)
			c := h.dial()
			req := browserAt(tc.n)
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			if tc.page {
				if got := readAll(t, c); !bytes.HasPrefix(got, []byte("HTTP/1.1 503 Service Unavailable\r\n")) || !bytes.Contains(got, []byte("Retry-After: 3\r\n")) {
					t.Fatalf("want the waking-up page, got %q", truncate(got))
				}
				return
			}
			wait(t, "held and waking", func() bool { n, _, _ := h.rec.counts(); return h.held() == 1 && n == 1 })
			b := newBackend(t)
			h.ready(b)
			wait(t, "the request at the pod, byte-exact", func() bool { return bytes.Equal(b.received(0), req) })
		})
	}
}

// A caller that leaves, at every stage of being held, is never passed on:
// the woken pod gets nothing from it.
func TestACallerThatLeavesAtAnyStageIsNeverPassedOn(t *testing.T) {
	l := DefaultLimits()
	post := func(n int) []byte { // a POST of n bytes in all
		head := "POST /orders HTTP/1.1\r\nHost: api\r\nContent-Length: " + strconv.Itoa(n) + "\r\n\r\n"
		return append([]byte(head), bytes.Repeat([]byte("o"), n-len(head))...)
	}
	for _, tc := range []struct {
		name     string
		sends    []byte
		dialling bool // leaves while the doorman dials its pod
	}{
		{"before its first byte", nil, false},
		{"mid-headers", []byte("POST /orders HTTP/1.1\r\nHost: api\r\nContent-Le"), false},
		{"past the free 8 KiB", post(l.FreeBytes + 100), false},
		{"past its 1 MiB", post(l.FreeBytes + l.ConnBytes + 100), false},
		{"while the doorman dials", post(200), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Limits = DefaultLimits()
			dialling, gate := make(chan struct{}, 1), make(chan struct{})
			cfg.Dial = func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
				if tc.dialling {
					dialling <- struct{}{}
					<-gate // a pod slow to answer the SYN
				}
				return dialTCP(ctx, ap)
			}
			w := testWorkload()
			w.MaxWait = time.Minute
			h := newHarness(t, cfg, w)
			b := newBackend(t)
			c := h.dial()
			wait(t, "held", func() bool { return h.held() == 1 })
			if len(tc.sends) > 0 {
				go func() { _, _ = c.Write(tc.sends) }()
				wait(t, "what fits read", func() bool {
					return h.srv.bytesFree() == l.TotalBytes-min(max(len(tc.sends)-l.FreeBytes, 0), l.ConnBytes)
				})
			}
			if tc.dialling {
				h.ready(b)
				<-dialling
			}
			_ = c.Close()
			if tc.dialling {
				close(gate)
			} else {
				wait(t, "the caller let go", func() bool { return h.held() == 0 })
				h.ready(b)
			}
			wait(t, "the caller let go", func() bool { return h.held() == 0 })
			time.Sleep(100 * time.Millisecond) // give a wrong pass the chance to happen
			for i := 0; i < b.accepted(); i++ {
				if got := b.received(i); len(got) > 0 {
					t.Fatalf("the pod got %d bytes from a caller that left: %q", len(got), truncate(got))
				}
			}
		})
	}
}
