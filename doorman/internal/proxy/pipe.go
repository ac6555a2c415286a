package proxy

import (
	"context"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// pipe copies both ways between the caller and the pod until both sides
// are done, passing each half-close on. It closes both when either side
// fails, when the connection carries nothing either way for IdleTimeout,
// or when ctx ends.
func (s *Server) pipe(ctx context.Context, caller, pod *net.TCPConn) {
	closeBoth := sync.OnceFunc(func() { _ = caller.Close(); _ = pod.Close() })
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()
	// The idle check runs on a timer, not a goroutine of its own.
	check := max(s.cfg.IdleTimeout/10, 10*time.Millisecond)
	var mu sync.Mutex
	var idle *time.Timer
	mu.Lock()
	idle = time.AfterFunc(check, func() {
		if idleFor(caller) >= s.cfg.IdleTimeout && idleFor(pod) >= s.cfg.IdleTimeout {
			closeBoth()
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if idle != nil {
			idle.Reset(check)
		}
	})
	mu.Unlock()
	defer func() {
		mu.Lock()
		idle.Stop()
		idle = nil
		mu.Unlock()
	}()
	done := make(chan struct{})
	buf := s.cfg.SocketBuffer
	mode := s.cfg.Copy
	go func() { defer close(done); copyHalf(mode, pod, caller, buf, closeBoth) }()
	copyHalf(mode, caller, pod, buf, closeBoth)
	<-done
	closeBoth()
}

// copyHalf copies src to dst as mode says (by default streamCopy: messages
// through a small buffer, streams with splice). At src's end it half-closes dst; on an error it
// closes both.
// It first waits for src to have something to say, so a replayed caller
// waiting for its answer sets nothing up, nor do hundreds of held callers
// being passed on at once.
//
// Once src speaks, the kernel buffers this direction goes through (src's
// receive buffer, dst's send buffer) are capped at buf bytes when buf > 0.
// Splice passes the sender's own pages on without copying them, so what
// is in flight stays in memory until the receiver copies it out; with the
// kernel's autotuned buffers (megabytes each) the receiver reads it long
// after it left the caches. Capped, the data in flight stays small and
// warm: over veth, 1.5x HAProxy's bytes instead of 1.25x with one stream,
// and 1.5x instead of 1.06x with eight (docs/bench/doorman.md).
func copyHalf(mode CopyMode, dst, src *net.TCPConn, buf int, closeBoth func()) {
	if err := waitReadable(src); err != nil {
		closeBoth()
		return
	}
	if buf > 0 {
		_ = src.SetReadBuffer(buf)
		_ = dst.SetWriteBuffer(buf)
	}
	if _, err := mode.copy(dst, src); err != nil {
		closeBoth()
		return
	}
	if err := dst.CloseWrite(); err != nil {
		closeBoth()
	}
}

// waitReadable returns once c has bytes, its end or an error to read,
// without reading anything.
func waitReadable(c *net.TCPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var b [1]byte
	return rc.Read(func(fd uintptr) bool {
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return err != unix.EAGAIN && err != unix.EINTR
	})
}

// idleFor returns how long the socket has carried no data either way,
// from the kernel's TCP_INFO, so the splice path needs no byte counting.
// When it cannot tell it returns 0: never idle.
func idleFor(c *net.TCPConn) time.Duration {
	info, err := tcpInfo(c)
	if err != nil {
		return 0
	}
	ms := min(info.Last_data_recv, info.Last_data_sent)
	return time.Duration(ms) * time.Millisecond
}

// tcpInfo reads c's TCP_INFO.
func tcpInfo(c *net.TCPConn) (*unix.TCPInfo, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return nil, err
	}
	return info, ierr
}
