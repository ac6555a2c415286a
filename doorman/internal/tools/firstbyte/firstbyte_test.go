package firstbyte

import (
	"net"
	"testing"
	"time"
)

// TestAByteWithoutAReceiveTimestampCountsAtItsRead: a stand-in pod whose
// socket gives no receive timestamps (not made by Listen) reports each
// arrival at its read, never as zero, which would make a wake look
// instant.
func TestAByteWithoutAReceiveTimestampCountsAtItsRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // no SO_TIMESTAMPNS
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rec := New(3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go rec.Serve(c)
		}
	}()
	t0 := time.Now()
	sendFirstBytes(t, rec, ln.Addr().String(), 3)
	k50, k99, kmax := rec.KernelPercentiles(t0)
	r50, r99, rmax := rec.Percentiles(t0)
	if k50 <= 0 || k99 <= 0 {
		t.Fatalf("arrival p50 %v, p99 %v: want the reads (%v, %v), not zero", k50, k99, r50, r99)
	}
	if k50 != r50 || k99 != r99 || kmax != rmax {
		t.Fatalf("arrivals %v/%v/%v, reads %v/%v/%v: without timestamps they must be the reads", k50, k99, kmax, r50, r99, rmax)
	}
}

// TestListenTimestampsArrivalsNoLaterThanReads: through Listen, each byte
// carries the kernel's receive timestamp, which is never after its read.
func TestListenTimestampsArrivalsNoLaterThanReads(t *testing.T) {
	rec := New(1)
	ln, err := rec.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t0 := time.Now()
	sendFirstBytes(t, rec, ln.Addr().String(), 1)
	k, _, _ := rec.KernelPercentiles(t0)
	r, _, _ := rec.Percentiles(t0)
	if k <= 0 || k > r {
		t.Fatalf("arrival %v, read %v: want 0 < arrival <= read", k, r)
	}
}

// sendFirstBytes makes n connections to addr, each sending one byte, and
// waits until rec has recorded them all.
func sendFirstBytes(t *testing.T, rec *Recorder, addr string, n int) {
	t.Helper()
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Wait(n, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}
