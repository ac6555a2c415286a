package proxy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
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

// TestSpliceCopyIsByteExactUnderBackPressure: 8 MiB written in pieces of
// every size, read in small pieces through small socket buffers (so the
// pump keeps finding the destination full and waits for room), arrive
// exactly, and the copy ends with the sender's end, counting every byte.
func TestSpliceCopyIsByteExactUnderBackPressure(t *testing.T) {
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
		n, err := spliceCopy(dst, src)
		_ = dst.CloseWrite()
		done <- result{n, err}
	}()
	var got bytes.Buffer
	buf := make([]byte, 1500)
	_ = receiver.SetReadDeadline(time.Now().Add(30 * time.Second)) // fail, not hang
	for {
		n, err := receiver.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("spliceCopy: %v", r.err)
	}
	if r.n != int64(len(want)) {
		t.Errorf("spliceCopy counted %d bytes, want %d", r.n, len(want))
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
	go func() { _, err := spliceCopy(dst, src); done <- err }()
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
			t.Fatalf("spliceCopy returned %v, want a splice error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("spliceCopy did not return after the destination reset")
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
