package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// spliceChunk is the most one splice moves from a socket into the pipe,
// as Go's own (internal/poll.maxSpliceSize), and the pipe's size.
const spliceChunk = 1 << 20

// messageBuf is what a message is first read into. A read that fills it
// says a stream is flowing: the rest of that burst is spliced.
const messageBuf = 4 << 10

// recheckAfter is how long after a message the copy looks at its source
// once more, for a reset that came in with the message (see streamCopy).
var recheckAfter = 200 * time.Millisecond

var messageBufs = sync.Pool{New: func() any { return new([messageBuf]byte) }}

// CopyMode is how a passed-on connection's bytes are copied, each way.
type CopyMode int

const (
	// CopySplice is the fast path, streamCopy: raw system calls, small
	// messages through a pooled buffer, streams with splice(2), TCP_INQ to
	// skip the read that would say EAGAIN.
	CopySplice CopyMode = iota
	// CopyPlain is io.CopyBuffer through a Go buffer, hiding the
	// connections' ReadFrom and WriteTo so that Go's own splice is not used
	// either: the switch for a kernel or sandbox (gVisor, an old kernel
	// without TCP_INQ) where the fast path misbehaves, and the baseline the
	// fast path is measured against.
	CopyPlain
)

// ParseCopyMode reads the doorman's --copy flag: splice or plain.
func ParseCopyMode(s string) (CopyMode, error) {
	switch s {
	case "splice":
		return CopySplice, nil
	case "plain":
		return CopyPlain, nil
	}
	return 0, fmt.Errorf("unknown copy mode %q: want splice or plain", s)
}

// String is the mode as --copy names it.
func (m CopyMode) String() string {
	if m == CopyPlain {
		return "plain"
	}
	return "splice"
}

// copy copies src to dst until src's end, as m says.
func (m CopyMode) copy(dst, src *net.TCPConn) (int64, error) {
	if m == CopyPlain {
		return plainCopy(dst, src)
	}
	return streamCopy(dst, src)
}

var plainBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// plainCopy is io.CopyBuffer through a pooled 32 KiB buffer, with the
// connections wrapped so io.Copy finds neither ReadFrom nor WriteTo.
func plainCopy(dst, src *net.TCPConn) (int64, error) {
	bp := plainBufs.Get().(*[32 << 10]byte)
	defer plainBufs.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, bp[:])
}

// streamCopy copies src to dst until src's end, as io.Copy between two
// *net.TCPConn does, with splice(2) through a pipe for a stream, but:
//
//   - Every system call is a raw one. The descriptors are non-blocking, so
//     none waits, but a Go system call (syscall.Syscall) tells the
//     scheduler it is entering one, and when every P has been idle (a
//     connection of small requests and answers spends most of its time
//     waiting on the netpoller) sysmon is in its deep sleep and each such
//     call wakes it with a futex, after which it ticks every 20 µs. On a
//     CPU the proxy shares, as on a busy node, that is two context
//     switches per message. The waiting is still Go's netpoller: RawConn
//     Read and Write park the goroutine on EAGAIN.
//
//   - A message (what one read finds, when it does not fill messageBuf) is
//     read and written through a small pooled buffer, much as HAProxy's
//     splice-auto does: for a few hundred bytes two splices cost more than
//     a read and a write. A read that fills the buffer switches the
//     direction to splice until a wake-up moves less than the buffer.
//
//   - After a message, the copy does not read again to be told EAGAIN: it
//     asks the kernel, with TCP_INQ, how much is left, and parks at once
//     when nothing is (TCP_INQ counts a FIN that came with the message as
//     something left). That saves a system call per message each way. A
//     reset that came in with the message is the one thing TCP_INQ does
//     not count, and the netpoller, edge-triggered, reports the two as one
//     event; so a copy that parked this way reads once more recheckAfter
//     later (a read deadline, armed once, not per message).
//
// Measured: docs/bench/doorman.md, "everything on one CPU".
func streamCopy(dst, src *net.TCPConn) (written int64, err error) {
	srcRC, err := src.SyscallConn()
	if err != nil {
		return 0, err
	}
	dstRC, err := dst.SyscallConn()
	if err != nil {
		return 0, err
	}
	c := &copier{src: src, dstRC: dstRC}
	_ = srcRC.Control(func(fd uintptr) {
		c.inq = unix.SetsockoptInt(int(fd), unix.SOL_TCP, unix.TCP_INQ, 1) == nil
	})
	// The closures are made once: nothing is allocated per message.
	c.readf, c.writeMessage, c.pump = c.read, c.writeMessageTo, c.pumpTo
	defer c.release()
	for {
		// One RawConn.Read for as long as possible: the goroutine parks
		// inside it, where the netpoller's edge-triggered readiness is
		// kept between the calls of readf (a new Read resets it; readf's
		// first call reads, so nothing is missed).
		err = srcRC.Read(c.readf)
		if err != nil && c.armed && errors.Is(err, os.ErrDeadlineExceeded) {
			c.armed = false
			if err = src.SetReadDeadline(time.Time{}); err == nil {
				continue // the recheck: readf reads once more
			}
		}
		break
	}
	switch {
	case err != nil:
		return c.written, err
	case c.werr != nil:
		return c.written, copyError(dst, c.wop, c.werr)
	case c.rerr != nil:
		return c.written, copyError(src, c.rop, c.rerr)
	}
	return c.written, nil
}

// copier is one direction's copy state.
type copier struct {
	src          *net.TCPConn
	dstRC        syscall.RawConn
	readf        func(uintptr) bool
	writeMessage func(uintptr) bool
	pump         func(uintptr) bool
	inq          bool // TCP_INQ is on for the source
	armed        bool // a recheck deadline is set on the source
	stream       bool // splicing
	burst        int  // bytes spliced since the last wake-up
	buf          *[messageBuf]byte
	n, off       int // the message in buf, and how much of it is written
	p            *splicePipe
	written      int64
	rerr, werr   error
	rop, wop     string // the system calls that failed
	msg          unix.Msghdr
	iov          unix.Iovec
	oob          [unix.SizeofCmsghdr + 8]byte
}

func (c *copier) release() {
	c.putBuf()
	if c.p != nil {
		putPipe(c.p)
		c.p = nil
	}
}

func (c *copier) putBuf() {
	if c.buf != nil {
		messageBufs.Put(c.buf)
		c.buf = nil
	}
}

// read is the source's RawConn.Read function: it copies what is there and
// returns false to park until there is more, true when the copy is over.
func (c *copier) read(fd uintptr) bool {
	for {
		if c.stream {
			if !c.splice(int(fd)) {
				return false
			}
		} else if !c.message(int(fd)) {
			return false
		}
		if c.rerr != nil || c.werr != nil || c.n < 0 {
			return true
		}
	}
}

// message reads what is there into the buffer and writes it out. It
// returns false to park. At the source's end it sets c.n to -1.
func (c *copier) message(fd int) bool {
	if c.buf == nil {
		c.buf = messageBufs.Get().(*[messageBuf]byte)
	}
	n, left, e := c.recv(fd)
	if e == unix.EAGAIN {
		c.putBuf()
		return false
	}
	if c.ended(n, e, "read") {
		return true
	}
	c.n, c.off = n, 0
	if err := c.dstRC.Write(c.writeMessage); err != nil && c.werr == nil {
		c.werr, c.wop = err, "write"
	}
	if c.werr != nil {
		return true
	}
	switch {
	case n == messageBuf:
		c.putBuf()
		c.stream, c.burst = true, 0
	case left == 0:
		c.putBuf()
		if !c.armed {
			c.armed = c.src.SetReadDeadline(time.Now().Add(recheckAfter)) == nil
		}
		return false
	}
	return true
}

// ended reports whether a read from the source (by op) that returned n and
// e, not EAGAIN, ends the copy: at an error, or at the source's end, which
// it marks by setting c.n to -1.
func (c *copier) ended(n int, e error, op string) bool {
	if e != nil {
		c.rerr, c.rop = e, op
		return true
	}
	if n == 0 {
		c.n = -1
		return true
	}
	return false
}

// recv reads into the buffer and says how many bytes the kernel still
// holds (1 for a FIN, and 1 when it cannot tell, so the caller reads on).
func (c *copier) recv(fd int) (n, left int, err error) {
	if !c.inq {
		n, err = rawIO(unix.SYS_READ, fd, c.buf[:])
		return n, 1, err
	}
	c.iov.Base = &c.buf[0]
	c.iov.SetLen(messageBuf)
	c.msg.Iov, c.msg.Iovlen = &c.iov, 1
	c.msg.Control = &c.oob[0]
	c.msg.SetControllen(len(c.oob))
	for {
		r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&c.msg)), 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, 0, e
		}
		left = 1
		if c.msg.Controllen >= unix.SizeofCmsghdr+4 {
			h := (*unix.Cmsghdr)(unsafe.Pointer(&c.oob[0]))
			if h.Level == unix.SOL_TCP && h.Type == unix.TCP_CM_INQ {
				left = int(*(*int32)(unsafe.Pointer(&c.oob[unix.SizeofCmsghdr])))
			}
		}
		return int(r), left, nil
	}
}

// writeMessageTo is the destination's RawConn.Write function for a message.
func (c *copier) writeMessageTo(fd uintptr) bool {
	for c.off < c.n {
		m, e := rawIO(unix.SYS_WRITE, int(fd), c.buf[c.off:c.n])
		if e == unix.EAGAIN {
			return false
		}
		if e != nil {
			c.werr, c.wop = e, "write"
			return true
		}
		c.off += m
		c.written += int64(m)
	}
	return true
}

// splice moves what is there through the pipe. It returns false to park;
// a wake-up that moved less than a message buffer ends the stream.
func (c *copier) splice(fd int) bool {
	if c.p == nil {
		p, err := getPipe()
		if err != nil {
			c.rerr, c.rop = err, "pipe"
			return true
		}
		c.p = p
	}
	n, e := rawSplice(fd, c.p.w, spliceChunk)
	if e == unix.EAGAIN {
		if c.burst < messageBuf {
			c.stream = false
			putPipe(c.p)
			c.p = nil
		}
		c.burst = 0
		return false
	}
	if c.ended(n, e, "splice") {
		return true
	}
	c.p.data += n
	c.burst += n
	if err := c.dstRC.Write(c.pump); err != nil && c.werr == nil {
		c.werr, c.wop = err, "write"
	}
	return true
}

// pumpTo is the destination's RawConn.Write function for the pipe.
func (c *copier) pumpTo(fd uintptr) bool {
	for c.p.data > 0 {
		m, e := rawSplice(c.p.r, int(fd), c.p.data)
		if e == unix.EAGAIN {
			return false
		}
		if e != nil {
			c.werr, c.wop = e, "splice"
			return true
		}
		c.p.data -= m
		c.written += int64(m)
	}
	return true
}

// rawIO is read(2) or write(2) as a raw system call, retrying on EINTR.
func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	for {
		r, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
}

// copyError names the connection and the system call a copy failed on, as
// net's errors do.
func copyError(c *net.TCPConn, op string, err error) error {
	if oe := (*net.OpError)(nil); errors.As(err, &oe) {
		return err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// rawSplice moves up to n bytes from in to out without blocking, retrying
// on EINTR.
func rawSplice(in, out, n int) (int, error) {
	for {
		r, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(n), unix.SPLICE_F_NONBLOCK)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
}

// splicePipe is a pipe and how many bytes sit in it.
type splicePipe struct {
	r, w    int
	data    int
	cleanup runtime.Cleanup // closes a pipe the pool drops
}

var pipePool = &sync.Pool{New: newPipe}

func newPipe() any {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return err
	}
	// Best effort: past the user's pipe-user-pages-soft the kernel
	// refuses and the pipe keeps its default 64 KiB.
	_, _ = unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, spliceChunk)
	p := &splicePipe{r: fds[0], w: fds[1]}
	p.cleanup = runtime.AddCleanup(p, func(fds [2]int) { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) }, fds)
	return p
}

func getPipe() (*splicePipe, error) {
	switch v := pipePool.Get().(type) {
	case *splicePipe:
		return v, nil
	case error:
		return nil, v
	default:
		return nil, syscall.EINVAL
	}
}

// putPipe pools an empty pipe for the next copy and closes one that still
// holds bytes (the copy failed part way), which no other copy may see.
func putPipe(p *splicePipe) {
	if p.data != 0 {
		p.cleanup.Stop()
		_ = unix.Close(p.r)
		_ = unix.Close(p.w)
		return
	}
	pipePool.Put(p)
}
