package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The held bytes: what a held caller sent before it could be passed on,
// read within the byte budgets (Limits: each connection's first FreeBytes
// free, then up to ConnBytes of the TotalBytes all share) and replayed to
// the pod, byte-exact. Whoever owns the connection owns them (see conn).

// readChunk is how much one read of a held caller asks for.
const readChunk = 4 << 10

// errInterrupted: a wait was cut short to look again.
var errInterrupted = errors.New("interrupted")

// readBufs lends read buffers only for the moment bytes are copied out.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

// readUntil waits for the caller's next bytes (appended to buf) until
// deadline, or until changed or placeFreed is done (either may be nil).
// It returns nil after a read, errInterrupted, a timeout error at the
// deadline, or why the caller is gone (also kept in readErr).
//
// It waits in the netpoller without a buffer: a held connection costs no
// read buffer while its caller is quiet, only while reading. Nor does it
// take any of the shared budget while it waits: past its free bytes, a
// caller's bytes are first seen waiting (a one-byte peek), then the budget
// they may take is taken and read at once, so the budget counts bytes
// read, never a quiet caller's. A notifier's context cuts the read short
// through context.AfterFunc (interrupt), which starts a goroutine only
// when the context is done.
func (c *conn) readUntil(deadline time.Time, changed, placeFreed context.Context) error {
	if c.readErr != nil {
		return c.readErr
	}
	if c.full() {
		return c.waitUnread(deadline, changed, placeFreed, nil)
	}
	// The deadline first, then the interrupts: one already due cuts this
	// read short rather than being overwritten.
	_ = c.sock.SetReadDeadline(deadline)
	stopChanged, stopFreed := c.interruptOn(changed), c.interruptOn(placeFreed)
	r := heldRead{c: c}
	err := c.rc.Read(r.try)
	stopChanged()
	stopFreed()
	c.srv.caps.giveBytes(c.unused(r.want - r.read))
	if err == nil {
		err = r.err
	}
	switch {
	case err == nil && r.want == 0:
		return c.waitUnread(deadline, changed, placeFreed, r.bytesFreed)
	case err == nil:
		return nil
	case isTimeout(err):
		if time.Now().Before(deadline) {
			return errInterrupted
		}
		return err
	}
	c.readErr = err
	return err
}

// heldRead is one read of a held caller's next bytes (readUntil), as
// RawConn.Read calls try until it says done: the bytes it may take (want,
// taken from the budget), the bytes it took (read, appended to buf), and
// why the caller is gone (err). want stays 0 when the bytes wait for the
// shared budget, which bytesFreed then says has room again.
type heldRead struct {
	c          *conn
	want, read int
	bytesFreed context.Context
	err        error
}

// try is one attempt on the socket's descriptor: false to park in the
// netpoller until it is readable, true when done.
func (r *heldRead) try(fd uintptr) bool {
	c := r.c
	if c.counting() && !waiting(fd) {
		return false // nothing to read yet: wait, taking no budget
	}
	if r.want, r.bytesFreed = c.room(); r.want == 0 {
		return true // bytes wait, the shared budget is spent
	}
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	k, e := unix.Read(int(fd), (*bp)[:r.want])
	if errors.Is(e, unix.EAGAIN) || errors.Is(e, unix.EINTR) {
		c.srv.caps.giveBytes(c.unused(r.want))
		r.want = 0
		return false
	}
	switch {
	case e != nil:
		r.err = e
	case k == 0:
		r.err = io.EOF
	default:
		c.buf = append(c.buf, (*bp)[:k]...)
		r.read = k
	}
	return true
}

// waiting reports whether the socket has a byte to read, or its end (a FIN
// or an error), without taking it.
func waiting(fd uintptr) bool {
	var b [1]byte
	_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR)
}

// leftCheck is how often a caller that is not being read (no room for its
// bytes) is asked whether it is still there.
const leftCheck = 500 * time.Millisecond

// waitUnread waits, without reading, for a caller with no room left for its
// bytes: it waits in the network. Since nothing reads it, its leaving (a
// FIN or a reset) and the doorman closing its socket are found by asking
// the socket every leftCheck; then it returns why, kept in readErr, so the
// caller is never passed on. A FIN is seen once every byte before it is in
// the doorman's socket buffer: a caller that leaves partway through a body
// larger than that is let go once it is read.
func (c *conn) waitUnread(deadline time.Time, changed, placeFreed, bytesFreed context.Context) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	tick := time.NewTicker(leftCheck)
	defer tick.Stop()
	for {
		select {
		case <-doneOf(changed):
		case <-doneOf(placeFreed):
		case <-doneOf(bytesFreed):
		case <-t.C:
			return os.ErrDeadlineExceeded
		case <-c.srv.ctx.Done():
			return c.srv.ctx.Err()
		case <-tick.C:
			if err := c.left(); err != nil {
				return err
			}
			continue
		}
		return errInterrupted
	}
}

// tcpEstablished is Linux's TCP_ESTABLISHED state in tcp_info.
const tcpEstablished = 1

// left asks the socket, without reading it, whether the caller is gone
// (gone); it returns why (also kept in readErr), or nil while the
// connection is established.
func (c *conn) left() error {
	if c.readErr != nil {
		return c.readErr
	}
	if gone := c.gone(); gone != nil {
		c.readErr = gone
		return gone
	}
	return nil
}

// gone asks the socket, without reading it or changing anything, whether
// the caller is gone: it sent a FIN or a reset, or the doorman closed the
// socket. It returns why, or nil while the connection is established; any
// goroutine may call it.
func (c *conn) gone() error {
	if c.rc == nil {
		return net.ErrClosed
	}
	var gone error
	err := control(c.rc, func(fd int) error {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return err
		}
		if info.State != tcpEstablished {
			gone = io.EOF
		}
		return nil
	})
	if err != nil {
		return err
	}
	return gone
}

// interruptOn interrupts the connection when ctx is done, until stopped.
func (c *conn) interruptOn(ctx context.Context) (stop func() bool) {
	if ctx == nil {
		return func() bool { return false }
	}
	return context.AfterFunc(ctx, c.interrupt)
}

// full reports whether the caller has sent all the bytes it may: its free
// bytes and its cap.
func (c *conn) full() bool {
	l := c.srv.cfg.Limits
	return len(c.buf) >= l.FreeBytes+l.ConnBytes
}

// counting reports whether the caller's next bytes count against the
// shared budget: its free bytes are read.
func (c *conn) counting() bool { return len(c.buf) >= c.srv.cfg.Limits.FreeBytes }

// room returns how many bytes the next read may take: the free bytes
// first, then the shared budget up to the per-connection cap, taken now.
// 0 means none now, and bytesFreed, when not nil, is done once the shared
// budget has bytes again.
func (c *conn) room() (n int, bytesFreed context.Context) {
	l := c.srv.cfg.Limits
	have := len(c.buf)
	if have < l.FreeBytes {
		return min(readChunk, l.FreeBytes-have), nil
	}
	if c.full() {
		return 0, nil
	}
	got, freed := c.srv.caps.takeBytes(min(readChunk, l.FreeBytes+l.ConnBytes-have))
	c.counted += got
	return got, freed
}

// unused gives back n counted bytes a read did not use; it returns how many.
func (c *conn) unused(n int) int {
	l := c.srv.cfg.Limits
	over := max(len(c.buf)+n-l.FreeBytes, 0) // the part of n that was counted
	back := min(n, over, c.counted)
	c.counted -= back
	return back
}

// releaseBytes drops the held bytes and gives the shared budget back.
func (c *conn) releaseBytes() {
	n := c.counted
	c.counted = 0
	c.buf = nil
	c.srv.caps.giveBytes(n)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
