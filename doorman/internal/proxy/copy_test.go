package proxy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *net.TCPConn, 1)
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	client, err = net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

// TestStreamCopyIsByteExactUnderBackPressure: 8 MiB written in pieces of
// every size, read in small pieces through small socket buffers (so the
// pump keeps finding the destination full and waits for room), arrive
// exactly, and the copy ends with the sender's end, counting every byte.
func TestStreamCopyIsByteExactUnderBackPressure(t *testing.T) {
	for _, mode := range copyModes {
		t.Run(mode.String(), func(t *testing.T) { byteExactUnderBackPressure(t, mode) })
	}
}

func byteExactUnderBackPressure(t *testing.T, mode CopyMode) {
	t.Helper()
	sender, src := tcpPair(t)
	dst, receiver := tcpPair(t)
	_ = dst.SetWriteBuffer(16 << 10)
	_ = receiver.SetReadBuffer(16 << 10)
	want := make([]byte, 8<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	go func() {
		for rest := want; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(300<<10))
			if _, err := sender.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
		_ = sender.CloseWrite()
	}()
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := mode.copy(dst, src)
		_ = dst.CloseWrite()
		done <- result{n, err}
	}()
	var got bytes.Buffer
	buf := make([]byte, 1500)
	_ = receiver.SetReadDeadline(time.Now().Add(30 * time.Second)) // fail, not hang
	for {
		n, err := receiver.Read(buf)
		got.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("streamCopy: %v", r.err)
	}
	if r.n != int64(len(want)) {
		t.Errorf("streamCopy counted %d bytes, want %d", r.n, len(want))
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("receiver got %d bytes differing from the %d sent", got.Len(), len(want))
	}
}

// TestAPipeLeftHoldingBytesIsNeverReused: when the destination goes away
// while bytes sit in the pipe, the copy fails naming the splice, and the
// next copy does not get that pipe with those bytes in it.
func TestAPipeLeftHoldingBytesIsNeverReused(t *testing.T) {
	saved := pipePool
	defer func() { pipePool = saved }()
	var mu sync.Mutex
	var made []*splicePipe
	pipePool = &sync.Pool{New: func() any {
		v := newPipe()
		if p, ok := v.(*splicePipe); ok {
			mu.Lock()
			made = append(made, p)
			mu.Unlock()
		}
		return v
	}}

	sender, src := tcpPair(t)
	dst, receiver := tcpPair(t)
	_ = dst.SetWriteBuffer(64 << 10)
	_ = receiver.SetReadBuffer(64 << 10)
	go func() { _, _ = sender.Write(make([]byte, 16<<20)) }()
	done := make(chan error, 1)
	go func() { _, err := streamCopy(dst, src); done <- err }()
	// The receiver reads nothing until the pump waits with bytes in the
	// pipe, then resets the connection.
	var failed *splicePipe
	wait(t, "bytes waiting in the pipe", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range made {
			if pipeHolds(p) > 0 {
				failed = p
				return true
			}
		}
		return false
	})
	_ = receiver.SetLinger(0)
	_ = receiver.Close()
	select {
	case err := <-done:
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "splice" {
			t.Fatalf("streamCopy returned %v, want a splice error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("streamCopy did not return after the destination reset")
	}
	for range 4 {
		p, err := getPipe()
		if err != nil {
			t.Fatal(err)
		}
		if p == failed || pipeHolds(p) != 0 {
			t.Fatalf("getPipe handed back the failed copy's pipe (holding %d bytes)", pipeHolds(p))
		}
		defer putPipe(p)
	}
	// And the failed copy's pipe is closed (its descriptor number may
	// have been reused since, but not by a pipe holding those bytes).
	if pipeHolds(failed) > 0 {
		t.Fatal("the failed copy's pipe is still open")
	}
}

// pipeHolds returns how many bytes sit in p (FIONREAD on its read end).
func pipeHolds(p *splicePipe) int {
	n, err := unix.IoctlGetInt(p.r, unix.TIOCINQ) // FIONREAD
	if err != nil {
		return -1
	}
	return n
}

// TestMessagesOfEverySizeAroundTheBufferPassExactly: request and answer
// pairs of sizes on both sides of the message buffer, so each direction
// goes from messages to splicing and back, arrive byte-exact and in order.
func TestMessagesOfEverySizeAroundTheBufferPassExactly(t *testing.T) {
	for _, mode := range copyModes {
		t.Run(mode.String(), func(t *testing.T) { messagesOfEverySize(t, mode) })
	}
}

func messagesOfEverySize(t *testing.T, mode CopyMode) {
	t.Helper()
	caller, in := tcpPair(t)
	out, pod := tcpPair(t)
	go func() { _, _ = mode.copy(out, in); _ = out.CloseWrite() }()
	go func() { _, _ = mode.copy(in, out); _ = in.CloseWrite() }()
	go func() { _, _ = io.Copy(pod, pod); _ = pod.CloseWrite() }() // the echo
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{1, 2, 100, messageBuf - 1, messageBuf, messageBuf + 1, 2 * messageBuf, 64 << 10, 3, 1 << 20, 7, messageBuf, 1}
	_ = caller.SetDeadline(time.Now().Add(30 * time.Second)) // fail, not hang
	for _, n := range sizes {
		msg := make([]byte, n)
		for i := range msg {
			msg[i] = byte(rng.Uint32())
		}
		go func() { _, _ = caller.Write(msg) }()
		got := make([]byte, n)
		if _, err := io.ReadFull(caller, got); err != nil {
			t.Fatalf("a %d-byte message: %v", n, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("a %d-byte message came back different", n)
		}
	}
	_ = caller.CloseWrite()
	if n, err := caller.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after the caller's end: read %d bytes, %v; want the end passed back", n, err)
	}
}

// The copy parks after a message without reading again to be told EAGAIN,
// so what came in with the message must still end it. Each of these sends
// a message and then its end, lets the netpoller report them (see
// settleReadiness), and only then starts the copy, so nothing but what the
// copy does itself can tell it of the end; recheckAfter is an hour unless
// the test is about it.

// TestAnEndThatCameWithTheMessageEndsTheCopy: a FIN behind the message
// (TCP_INQ counts it) ends the copy at once.
func TestAnEndThatCameWithTheMessageEndsTheCopy(t *testing.T) {
	got, err := copyAfterEnd(t, time.Hour, func(sender *net.TCPConn) { _ = sender.CloseWrite() })
	if err != nil {
		t.Fatalf("streamCopy returned %v, want the end", err)
	}
	if got != "hello" {
		t.Fatalf("the destination got %q, want hello", got)
	}
}

// TestAResetThatCameWithTheMessageIsSeenOnTheRecheck: TCP_INQ does not
// count a reset, so the recheck finds it, and the copy fails naming it.
func TestAResetThatCameWithTheMessageIsSeenOnTheRecheck(t *testing.T) {
	got, err := copyAfterEnd(t, 50*time.Millisecond, func(sender *net.TCPConn) {
		_ = sender.SetLinger(0)
		_ = sender.Close()
	})
	if !errors.Is(err, unix.ECONNRESET) {
		t.Fatalf("streamCopy returned %v, want the reset", err)
	}
	if got != "hello" {
		t.Fatalf("the destination got %q, want hello", got)
	}
}

// copyAfterEnd sends hello and then ends the sender with end, waits until
// both are in the source's queue, and copies with recheck as recheckAfter.
// It returns what reached the destination and the copy's error, failing
// the test if the copy does not end within 10 s.
func copyAfterEnd(t *testing.T, recheck time.Duration, end func(sender *net.TCPConn)) (string, error) {
	t.Helper()
	saved := recheckAfter
	recheckAfter = recheck
	defer func() { recheckAfter = saved }()
	sender, src := tcpPair(t)
	dst, receiver := tcpPair(t)
	if _, err := sender.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	end(sender)
	wait(t, "the message and its end in the source's queue", func() bool {
		info, err := tcpInfo(src)
		return err == nil && (info.State == unix.BPF_TCP_CLOSE_WAIT || info.State == unix.BPF_TCP_CLOSE)
	})
	settleReadiness(t, src)
	done := make(chan error, 1)
	go func() { _, err := streamCopy(dst, src); done <- err }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("streamCopy did not end")
	}
	_ = dst.Close()
	got, _ := io.ReadAll(receiver)
	return string(got), err
}

// settleReadiness returns once the netpoller has reported everything that
// happened on c so far: when 20 ms pass with no new report. A report left
// pending would wake the copy and hide whether it looks for itself.
func settleReadiness(t *testing.T, c *net.TCPConn) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	for range 100 {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		// Read resets what was reported before it; the first call of
		// the function parks, the second ends the Read.
		calls := 0
		err := rc.Read(func(uintptr) bool { calls++; return calls > 1 })
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
	}
	t.Fatal("the netpoller kept reporting readiness")
}

// FuzzStreamCopy: whatever is sent, in pieces of whatever sizes (on both
// sides of the message buffer, so a direction goes from messages to
// splicing and back), arrives exactly, and the copy counts every byte.
func FuzzStreamCopy(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), []byte{0, 3})
	f.Add(bytes.Repeat([]byte("z"), 3*messageBuf+7), []byte{63, 64, 0, 255})
	f.Fuzz(func(t *testing.T, data, pieces []byte) {
		if len(data) == 0 || len(data) > 48<<10 { // three times the largest piece: enough to switch back and forth
			return
		}
		sender, src := tcpPair(t)
		dst, receiver := tcpPair(t)
		counted := make(chan int64, 1)
		go func() {
			n, _ := streamCopy(dst, src)
			_ = dst.CloseWrite()
			counted <- n
		}()
		go func() {
			for i, rest := 0, data; len(rest) > 0; i++ {
				n := len(rest)
				if len(pieces) > 0 {
					n = min(n, int(pieces[i%len(pieces)])*64+1) // 1 byte to 16 KiB
				}
				if _, err := sender.Write(rest[:n]); err != nil {
					return
				}
				rest = rest[n:]
			}
			_ = sender.CloseWrite()
		}()
		_ = receiver.SetReadDeadline(time.Now().Add(20 * time.Second)) // fail, not hang
		got, err := io.ReadAll(receiver)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("received %d bytes differing from the %d sent", len(got), len(data))
		}
		if n := <-counted; n != int64(len(data)) {
			t.Fatalf("the copy counted %d bytes, want %d", n, len(data))
		}
	})
}

// TestTheCopySwitchChoosesThePath: the fast path turns TCP_INQ on for its
// source and splices a stream through a pipe from pipePool; plain does
// neither, so --copy plain really leaves both alone.
func TestTheCopySwitchChoosesThePath(t *testing.T) {
	for _, tc := range []struct {
		mode    CopyMode
		wantInq int
	}{{CopySplice, 1}, {CopyPlain, 0}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			sender, src := tcpPair(t)
			dst, receiver := tcpPair(t)
			payload := bytes.Repeat([]byte("s"), 4*messageBuf) // fills the message buffer: a stream
			go func() { _, _ = sender.Write(payload); _ = sender.CloseWrite() }()
			done := make(chan error, 1)
			go func() { _, err := tc.mode.copy(dst, src); _ = dst.CloseWrite(); done <- err }()
			_ = receiver.SetReadDeadline(time.Now().Add(10 * time.Second)) // fail, not hang
			got, err := io.ReadAll(receiver)
			if err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("received %d bytes (%v), want the %d sent", len(got), err, len(payload))
			}
			if err := <-done; err != nil {
				t.Fatalf("copy: %v", err)
			}
			rc, err := src.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			inq := -1
			_ = rc.Control(func(fd uintptr) { inq, _ = unix.GetsockoptInt(int(fd), unix.SOL_TCP, unix.TCP_INQ) })
			if inq != tc.wantInq {
				t.Fatalf("TCP_INQ on the source is %d after a %s copy, want %d", inq, tc.mode, tc.wantInq)
			}
		})
	}
}
