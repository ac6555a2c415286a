package proxy

import (
	"net"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// spliceChunk is the most one splice moves from a socket into the pipe,
// as Go's own (internal/poll.maxSpliceSize), and the pipe's size.
const spliceChunk = 1 << 20

// spliceCopy copies src to dst through a pipe with splice(2) until src's
// end, as io.Copy between two *net.TCPConn does, with one difference:
// each splice is a raw system call.
//
// Why: the splices are non-blocking on non-blocking descriptors, so they
// never wait, but a Go system call (syscall.Syscall) tells the scheduler
// it is entering one, and when every P has been idle (a connection of
// small requests and answers spends most of its time waiting on the
// netpoller) sysmon is in its deep sleep and every such call wakes it
// with a futex, after which it ticks every 20 µs until the Ps go idle
// again. On a CPU the proxy shares, as it does on a busy node, that is
// about two context switches per message. A raw system call leaves the
// scheduler alone; the waiting is still Go's netpoller (RawConn.Read and
// Write park the goroutine on EAGAIN). Measured on one CPU: see
// docs/bench/doorman.md, "everything on one CPU".
func spliceCopy(dst, src *net.TCPConn) (written int64, err error) {
	srcRC, err := src.SyscallConn()
	if err != nil {
		return 0, err
	}
	dstRC, err := dst.SyscallConn()
	if err != nil {
		return 0, err
	}
	p, err := getPipe()
	if err != nil {
		return 0, err
	}
	defer putPipe(p)
	// One RawConn call each way for the whole copy, its closure made
	// once: the goroutine parks on EAGAIN inside it (the netpoller's
	// edge-triggered readiness is kept between the calls of f, where a
	// new RawConn call would reset it), and nothing is allocated per
	// message.
	var rerr, werr error
	pump := func(fd uintptr) bool {
		for p.data > 0 {
			m, e := rawSplice(p.r, int(fd), p.data)
			if e == unix.EAGAIN {
				return false
			}
			if e != nil {
				werr = e
				return true
			}
			p.data -= m
			written += int64(m)
		}
		return true
	}
	err = srcRC.Read(func(fd uintptr) bool {
		for {
			n, e := rawSplice(int(fd), p.w, spliceChunk)
			if e == unix.EAGAIN {
				return false
			}
			if e != nil {
				rerr = e
				return true
			}
			if n == 0 {
				return true // src's end
			}
			p.data += n
			if err := dstRC.Write(pump); err != nil {
				werr = err
			}
			if werr != nil {
				return true
			}
		}
	})
	switch {
	case err != nil:
		return written, err
	case werr != nil:
		return written, spliceError(dst, werr)
	case rerr != nil:
		return written, spliceError(src, rerr)
	}
	return written, nil
}

// spliceError names the connection a splice failed on, as net's errors do.
func spliceError(c *net.TCPConn, err error) error {
	if _, ok := err.(*net.OpError); ok {
		return err
	}
	return &net.OpError{Op: "splice", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
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
