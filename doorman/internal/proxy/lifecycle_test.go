package proxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"napwake.dev/doorman/internal/fdtable"
)

func (s *Server) bytesFree() int {
	s.caps.mu.Lock()
	defer s.caps.mu.Unlock()
	return s.caps.bytesFree
}

func TestByteBudgetsApplyBackPressureAndLoseNothing(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.FreeBytes, cfg.Limits.ConnBytes, cfg.Limits.TotalBytes = 1024, 2048, 4096
	h := newHarness(t, cfg, testWorkload())
	b := newBackend(t)
	body := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 10<<10) }
	var conns []*net.TCPConn
	for i := 0; i < 3; i++ {
		c := h.dial()
		conns = append(conns, c)
		go func() { _, _ = c.Write(body(i)) }() // blocks once the doorman stops reading
	}
	// Two connections take their 2 KiB each past the free 1 KiB; the third
	// reads only its free 1 KiB and waits for the shared budget.
	wait(t, "the shared budget spent, three held", func() bool { return h.srv.bytesFree() == 0 && h.held() == 3 })
	h.ready(b)
	for i := range conns {
		wait(t, "every byte at the pod", func() bool {
			for j := 0; j < b.accepted(); j++ {
				if bytes.Equal(b.received(j), body(i)) {
					return true
				}
			}
			return false
		})
	}
	wait(t, "the budget given back", func() bool { return h.srv.bytesFree() == 4096 })
}

func TestAnIdlePassedConnectionIsClosedButPingsKeepItOpen(t *testing.T) {
	cfg := testConfig()
	cfg.IdleTimeout = 400 * time.Millisecond
	h := newHarness(t, cfg, testWorkload())
	b := newBackend(t)
	b.set(nil, true)
	h.ready(b)
	pinger := h.dial()
	idle := h.dial()
	_, _ = idle.Write([]byte("x"))
	start := time.Now()
	var stop atomic.Bool
	go func() {
		p := make([]byte, 4)
		for !stop.Load() {
			if _, err := pinger.Write([]byte("ping")); err != nil {
				return
			}
			_ = pinger.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := io.ReadFull(pinger, p); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond) // the ping interval
		}
	}()
	_ = idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(idle)
	if err != nil || string(got) != "x" {
		t.Fatalf("idle connection: %q %v, want the echo then a close", got, err)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", d)
	}
	if _, err := pinger.Write([]byte("ping")); err != nil {
		t.Fatalf("the pinging connection was closed: %v", err)
	}
	stop.Store(true)
}

func TestARemovedRouteLingersThenDrains(t *testing.T) {
	cfg := testConfig()
	cfg.Linger, cfg.Drain = 300*time.Millisecond, 700*time.Millisecond
	h := newHarness(t, cfg, testWorkload())
	b := newBackend(t)
	b.set(nil, true)
	h.ready(b)
	long := h.dial()
	_, _ = long.Write([]byte("a"))
	wait(t, "passing", func() bool { return b.accepted() == 1 })
	h.srv.SetRoutes(nil)
	stray := h.dial() // within the linger: still served, to the Ready pod
	_, _ = stray.Write([]byte("b"))
	wait(t, "the stray connection passed", func() bool { return b.accepted() == 2 })
	wait(t, "the port to close after the linger", func() bool {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.port)))
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
	if _, err := long.Write([]byte("still")); err != nil {
		t.Fatalf("a passing connection was cut before the drain: %v", err)
	}
	_ = long.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(long); err != nil {
		t.Fatalf("the drain did not close the passing connection: %v", err)
	}
}

// A removed route's passing connections are drained even once its port
// serves another route: the drain follows the listener they came through,
// not the port number, and leaves the new route's connections alone.
func TestARemovedRoutesConnectionsDrainAfterItsPortIsReused(t *testing.T) {
	cfg := testConfig()
	cfg.Linger, cfg.Drain = 100*time.Millisecond, 1500*time.Millisecond
	h := newHarness(t, cfg, testWorkload())
	b := newBackend(t)
	b.set(nil, true)
	h.ready(b)
	old := h.dial()
	_, _ = old.Write([]byte("a"))
	wait(t, "passing", func() bool { return b.accepted() == 1 })
	h.srv.SetRoutes(nil)
	wait(t, "the port to close after the linger", func() bool {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.port)))
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
	other := h.route
	other.Service, other.Workload.Name = "web", "web"
	if failed := h.srv.SetRoutes([]Route{other}); len(failed) > 0 {
		t.Fatalf("SetRoutes: %v", failed)
	}
	h.table.SetEndpoints(other.Key(), []netip.AddrPort{b.ap()})
	fresh := h.dial() // through the port's new listener, to the new route
	_, _ = fresh.Write([]byte("fresh"))
	wait(t, "the new route's connection passing", func() bool {
		for i := range b.accepted() {
			if string(b.received(i)) == "fresh" {
				return true
			}
		}
		return false
	})

	_ = old.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(old); err != nil {
		t.Fatalf("the removed route's connection was not drained once its port was reused: %v (read %q)", err, got)
	}
	if _, err := fresh.Write([]byte("still")); err != nil {
		t.Fatalf("the new route's connection was cut by the old route's drain: %v", err)
	}
	_ = fresh.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if got, err := io.ReadAll(fresh); !isTimeout(err) {
		t.Fatalf("the new route's connection ended (%q, %v); want it open", got, err)
	}
}

func TestARouteBackWithinTheLingerKeepsItsPort(t *testing.T) {
	cfg := testConfig()
	cfg.Linger = 100 * time.Millisecond
	h := newHarness(t, cfg, testWorkload())
	h.srv.SetRoutes(nil)
	h.srv.SetRoutes([]Route{h.route})
	time.Sleep(300 * time.Millisecond) // past the linger
	c := h.dial()
	_, _ = c.Write([]byte("x"))
	wait(t, "held", func() bool { return h.held() == 1 })
}

func TestStopServesThenRefusesThenCloses(t *testing.T) {
	h := newHarness(t, testConfig(), testWorkload())
	b := newBackend(t)
	b.set(nil, true)
	h.ready(b)
	open := h.dial()
	_, _ = open.Write([]byte("a"))
	wait(t, "passing", func() bool { return b.accepted() == 1 })
	var notReady atomic.Bool
	done := make(chan struct{})
	start := time.Now()
	go func() {
		h.srv.Stop(func() { notReady.Store(true) }, 300*time.Millisecond, 300*time.Millisecond)
		close(done)
	}()
	wait(t, "not Ready at once", notReady.Load)
	c := h.dial() // within the serve period: served
	_, _ = c.Write([]byte("b"))
	wait(t, "served while stopping", func() bool { return b.accepted() == 2 })
	wait(t, "no new connections after the serve period", func() bool {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.port)))
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
	if time.Since(start) < 300*time.Millisecond {
		t.Fatal("stopped accepting before the serve period ended")
	}
	if _, err := open.Write([]byte("c")); err != nil {
		t.Fatalf("an open connection was cut before the finish period: %v", err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return after the finish period")
	}
	_ = open.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(open); err != nil {
		t.Fatalf("open connection not closed after the finish period: %v", err)
	}
	// The diallers end with the server, not 10 s later.
	wait(t, "the diallers to end", func() bool { return len(h.srv.dials.places) == 0 })
	_ = context.Background()
}

// A started doorman's descriptor table already holds every descriptor its
// caps allow, so no wake waits for the table to grow (package fdtable).
func TestStartGrowsTheDescriptorTableForTheCaps(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.Held, cfg.Limits.Passing = 4096, 2048 // past what any other test opens
	want := cfg.Limits.descriptors()
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur < uint64(want) {
		t.Skipf("RLIMIT_NOFILE %d is below the %d descriptors the caps can use", rl.Cur, want)
	}
	newHarness(t, cfg, testWorkload())
	got, err := fdtable.Size()
	if err != nil {
		t.Fatal(err)
	}
	if got < want {
		t.Errorf("descriptor table holds %d after Start, want at least %d (Held %d + 2 × Passing %d + 1024)", got, want, cfg.Limits.Held, cfg.Limits.Passing)
	}
}

// A caller at its byte cap is not read, so its leaving is found by asking
// the socket: a caller whose whole request sits in the doorman's buffers
// when it closes is let go within leftCheck and never passed on, while a
// caller still there is.
func TestACallerAtItsCapThatLeavesIsNeverPassedOn(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.FreeBytes, cfg.Limits.ConnBytes, cfg.Limits.TotalBytes = 1024, 2048, 4096
	w := testWorkload()
	w.MaxWait = time.Minute // only finding it gone lets it go within the test
	h := newHarness(t, cfg, w)
	gone := h.dial()
	order := append([]byte("POST /orders HTTP/1.1\r\nHost: api\r\nContent-Length: 6000\r\n\r\n"), bytes.Repeat([]byte("x"), 6000)...)
	if _, err := gone.Write(order); err != nil { // fits the socket buffers
		t.Fatal(err)
	}
	wait(t, "the caller held at its cap", func() bool { return h.held() == 1 && h.srv.bytesFree() == 4096-2048 })
	_ = gone.Close()
	wait(t, "the caller that left let go", func() bool { return h.held() == 0 })

	stays := h.dial()
	if _, err := stays.Write([]byte("GET / HTTP/1.1\r\nHost: api\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	wait(t, "the caller that stays held", func() bool { return h.held() == 1 })
	b := newBackend(t)
	h.ready(b)
	wait(t, "the caller that stays at the pod", func() bool { return b.accepted() >= 1 })
	if n := b.accepted(); n != 1 || !bytes.HasPrefix(b.received(0), []byte("GET / ")) {
		t.Fatalf("the pod got %d connections, first %q; want only the caller that stayed", n, b.received(0))
	}
}

// Shutdown closes what is left when its time is up, and a caller held at
// its byte cap (not being read) goes with it at once, not at maxWait.
func TestShutdownEndsACallerHeldAtItsCap(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.FreeBytes, cfg.Limits.ConnBytes, cfg.Limits.TotalBytes = 1024, 2048, 4096
	w := testWorkload()
	w.MaxWait = time.Minute
	h := newHarness(t, cfg, w)
	c := h.dial()
	go func() { _, _ = c.Write(bytes.Repeat([]byte("x"), 64<<10)) }() // more than the socket buffers take
	wait(t, "the caller held at its cap", func() bool { return h.held() == 1 && h.srv.bytesFree() == 4096-2048 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	h.srv.Shutdown(ctx)
	if d := time.Since(start); d > 100*time.Millisecond+2*500*time.Millisecond+time.Second {
		t.Fatalf("Shutdown took %v with a caller held at its cap; want its time plus about half a second", d)
	}
}

// A caller who reaches a removed route's lingering port (kube-proxy had
// not yet dropped the doorman's last slice) while its workload pauses again
// on another port is a caller of that pause: it wakes the workload, and is
// passed to the pod once one is Ready. Before, the lingering port woke
// nothing, and the caller waited out its maxWait with the workload paused.
func TestACallerOnALingeringPortWakesItsWorkloadPausedAgain(t *testing.T) {
	cfg := testConfig()
	cfg.Linger, cfg.Drain = 5*time.Second, 10*time.Second
	running := testWorkload()
	running.Phase = "Running"
	h := newHarness(t, cfg, running)
	b := newBackend(t)
	b.set(nil, true)
	h.ready(b)
	if failed := h.srv.SetRoutes(nil); len(failed) > 0 { // woken: the route goes, its port lingers
		t.Fatal(failed)
	}
	h.table.SetEndpoints(h.route.Key(), nil) // the pause stops the pod
	again := testWorkload()
	again.PausedAt = time.Now().Truncate(time.Second)
	next := h.newRoute(again, h.route.Service, h.route.PortName)
	if failed := h.srv.SetRoutes([]Route{next}); len(failed) > 0 {
		t.Fatal(failed)
	}
	late := h.dial() // on the lingering port, as kube-proxy still sends it
	if _, err := late.Write([]byte("GET / HTTP/1.1\r\nHost: api\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, time.Second, "the workload paused again woken by the caller on the lingering port", func() bool {
		wakes, _, _ := h.rec.counts()
		return wakes == 1
	})
	h.ready(b)
	wait(t, "the caller passed to the pod", func() bool { return b.accepted() == 1 })
}
