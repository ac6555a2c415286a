// Package firstbyte times wake-to-first-byte: a stand-in pod records when
// each held caller's first byte reaches it, and the spread from the moment a
// Ready pod appeared is reported as percentiles. The latency test and the
// benchmark program share it.
//
// Two moments are kept for each caller: when the byte arrived at the pod's
// socket (the kernel's receive timestamp, SO_TIMESTAMPNS) and when the
// stand-in pod's own goroutine read it. The second adds the stand-in's
// accept loop and scheduling, which share the machine's CPUs with the
// doorman in a benchmark on one machine.
//
// It is a test and benchmark tool: no component imports it.
package firstbyte

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Recorder collects first-byte arrival times.
type Recorder struct {
	mu       sync.Mutex
	arrivals []time.Time // read by the stand-in pod
	kernel   []time.Time // received by the pod's socket
	got      chan struct{}
}

// New returns a Recorder for up to n callers.
func New(n int) *Recorder { return &Recorder{got: make(chan struct{}, n)} }

// Listen serves a stand-in pod on address (host:port) that records into r,
// with kernel receive timestamps, until the listener is closed.
func (r *Recorder) Listen(address string) (net.Listener, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, err
	}
	// Accepted sockets inherit the listener's timestamping.
	if err := control(ln.(*net.TCPListener), func(fd int) error {
		return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		_ = ln.Close()
		return nil, err
	}
	go AcceptEach(ln, r.Serve)
	return ln, nil
}

// AcceptEach serves each connection ln accepts on a goroutine of its own,
// until ln is closed.
func AcceptEach(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go serve(c)
	}
}

func control(ln *net.TCPListener, fn func(fd int) error) error {
	rc, err := ln.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// Serve is a stand-in pod's handler: it records the first byte's arrival,
// then drains and closes the connection.
func (r *Recorder) Serve(c net.Conn) {
	defer c.Close()
	read, kernel, err := readFirst(c)
	if err == nil {
		if kernel.IsZero() {
			// No receive timestamp came with the byte: count it at its
			// read, which is later than its arrival, so a missing
			// timestamp never makes a wake look faster (a whole round
			// without them used to report an arrival p99 of 0).
			kernel = read
		}
		r.mu.Lock()
		r.arrivals = append(r.arrivals, read)
		r.kernel = append(r.kernel, kernel)
		r.mu.Unlock()
		r.got <- struct{}{}
	}
	_, _ = io.Copy(io.Discard, c)
}

// readFirst reads one byte and returns when it was read and, when the
// socket timestamps, when it was received.
func readFirst(c net.Conn) (read, kernel time.Time, err error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		_, err = c.Read(make([]byte, 1))
		return time.Now(), time.Time{}, err
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	b := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))
	var n, oobn int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), b, oob, 0)
		return rerr != unix.EAGAIN && rerr != unix.EINTR
	}); err != nil {
		return time.Time{}, time.Time{}, err
	}
	read = time.Now()
	if rerr != nil {
		return time.Time{}, time.Time{}, rerr
	}
	if n == 0 {
		return time.Time{}, time.Time{}, io.EOF
	}
	msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := *(*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			kernel = time.Unix(ts.Unix())
		}
	}
	return read, kernel, nil
}

// Wait returns once n first bytes arrived, or an error after timeout.
func (r *Recorder) Wait(n int, timeout time.Duration) error {
	deadline := time.After(timeout)
	for range n {
		select {
		case <-r.got:
		case <-deadline:
			return errors.New("not every held caller reached the pod")
		}
	}
	return nil
}

// Percentiles returns p50, p99 and the maximum of the reads after t0.
func (r *Recorder) Percentiles(t0 time.Time) (p50, p99, max time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return percentiles(r.arrivals, t0)
}

// KernelPercentiles returns p50, p99 and the maximum of the arrivals at the
// pod's sockets after t0 (a byte without a receive timestamp, as from a
// stand-in pod not made by Listen, counts at its read).
func (r *Recorder) KernelPercentiles(t0 time.Time) (p50, p99, max time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return percentiles(r.kernel, t0)
}

func percentiles(ts []time.Time, t0 time.Time) (p50, p99, max time.Duration) {
	if len(ts) == 0 {
		return 0, 0, 0
	}
	d := make([]time.Duration, len(ts))
	for i, a := range ts {
		d[i] = a.Sub(t0)
	}
	slices.Sort(d)
	return d[len(d)/2], d[(len(d)*99+99)/100-1], d[len(d)-1]
}
