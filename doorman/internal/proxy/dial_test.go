package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"napwake.dev/shared/testnet"
)

// The default dial connects synchronously, then hands back a socket the
// netpoller can wait on: non-blocking, so a read deadline still ends a read.
func TestTheDefaultDialHandsBackANonBlockingSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial := Dialer(time.Second)
	c, err := dial(context.Background(), netip.MustParseAddrPort(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	if err := control(rc, func(fd int) (err error) { flags, err = unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); return err }); err != nil {
		t.Fatal(err)
	}
	if flags&unix.O_NONBLOCK == 0 {
		t.Fatal("the dialled socket was left blocking")
	}
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a quiet connection: %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the read deadline ended the read after %v", d)
	}
}

// A port nobody listens on is refused at once, not after the dial timeout.
func TestTheDefaultDialReportsARefusal(t *testing.T) {
	ap := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(testnet.FreePort(t)))
	start := time.Now()
	_, err := Dialer(5*time.Second)(context.Background(), ap)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial to a closed port: %v, want ECONNREFUSED", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("refused after %v", d)
	}
}

// The default dial to a pod that drops SYNs ends when its context does,
// not at its timeout: a caller that leaves or whose maxWait runs out frees
// its dialler.
func TestTheDefaultDialEndsWithItsContext(t *testing.T) {
	ap := synDropper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := Dialer(time.Minute)(ctx, ap)
	if err == nil {
		_ = c.Close()
		t.Fatal("a dial to a pod dropping SYNs connected")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the dial ended %v after it began, its context 200 ms", d)
	}
}
