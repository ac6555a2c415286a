package proxy

import (
	"context"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Dialer returns the doorman's plain TCP dial, what New uses when
// Config.Dial is nil (tests that map pod addresses wrap it). Its connect(2)
// blocks, for at most timeout (SO_SNDTIMEO), and the socket goes back to
// non-blocking before anything reads or writes it.
//
// Why: a pod on the node network answers a SYN within microseconds, often
// inside the connect call itself, yet a non-blocking connect returns
// EINPROGRESS and Go parks the goroutine until its netpoller reports the
// socket writable. While hundreds of held callers are being passed on,
// the scheduler has runnable goroutines at every turn, and it looks at the
// netpoller only when it runs out of them or when sysmon does, every
// 10 ms: in a fresh doorman passing 256 callers on, 64 connects finished
// in microseconds sat unseen for 14 ms. Blocking, the dialler has its
// answer when connect returns. Measured again once the descriptor table
// was grown at start (package fdtable), which removed the larger stall:
// p50 from a Ready pod to the first byte, 50 held, 1.5–1.8 ms blocking
// against 2.0–2.4 ms with Go's own dial; 256 held, 5.6 against 6.1–7.7 ms.
//
// Not Dialer.DialTCP: given the zero local address it still binds before
// connecting, and a bind picks its port the slow way, which cost 90% of
// passing 256 held callers on at once.
func Dialer(timeout time.Duration) func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	d := net.Dialer{Timeout: timeout, Control: func(_, _ string, rc syscall.RawConn) error {
		return control(rc, func(fd int) error {
			if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
				return err
			}
			return unix.SetNonblock(fd, false)
		})
	}}
	return func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
		conn, err := d.DialContext(ctx, "tcp", ap.String())
		if err != nil {
			return nil, err
		}
		c := conn.(*net.TCPConn)
		rc, err := c.SyscallConn()
		if err == nil {
			err = control(rc, func(fd int) error { return unix.SetNonblock(fd, true) })
		}
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	}
}

func control(rc syscall.RawConn, fn func(fd int) error) error {
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
