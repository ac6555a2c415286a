package relay

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"napwake.dev/shared/testnet"
)

func TestParseMapping(t *testing.T) {
	tests := []struct {
		in      string
		want    Mapping
		wantErr bool
	}{
		{"8080=20017", Mapping{8080, 20017}, false},
		{" 80 = 20000 ", Mapping{80, 20000}, false},
		{"8080", Mapping{}, true},
		{"0=20000", Mapping{}, true},
		{"8080=70000", Mapping{}, true},
		{"a=b", Mapping{}, true},
	}
	for _, tt := range tests {
		got, err := ParseMapping(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseMapping(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzParseMapping(f *testing.F) {
	for _, s := range []string{"8080=20017", "=", "1=65535", "99999=1", "-1=-1", "8080=20017=1"} {
		f.Add(s)
	}
	// Never panics; anything accepted is two ports in range.
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMapping(s)
		if err == nil && (m.Listen < 1 || m.Listen > 65535 || m.Doorman < 1 || m.Doorman > 65535) {
			t.Fatalf("accepted out-of-range mapping %q -> %v", s, m)
		}
	})
}

// TestRelayPassesBytesUntouchedBothWaysWithHalfClose stands a doorman in
// with an echo-and-count server on loopback.
func TestRelayPassesBytesUntouchedBothWaysWithHalfClose(t *testing.T) {
	doorman, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer doorman.Close()
	got := make(chan []byte, 1)
	go func() {
		for {
			c, err := doorman.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(c) // until the caller's half-close arrives
			if len(b) > 0 {       // Ready's probe connections send nothing
				got <- b
				_, _ = c.Write([]byte("reply:"))
				_, _ = c.Write(b)
			}
			_ = c.Close()
		}
	}()
	dport := doorman.Addr().(*net.TCPAddr).Port
	r := &Relay{DoormanHost: "127.0.0.1", ListenHost: "127.0.0.1", Mappings: []Mapping{{Listen: testnet.FreePort(t), Doorman: dport}}, Log: logr.Discard()}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan []net.Addr, 1)
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx, started) }()
	addrs := <-started
	if err := r.Ready(ctx); err != nil {
		t.Fatalf("Ready with the doorman listening: %v", err)
	}

	c, err := net.Dial("tcp", addrs[0].String())
	if err != nil {
		t.Fatal(err)
	}
	payload := append([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 0, 0xff, '\n')
	if _, err := c.Write(payload); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, payload) {
		t.Fatalf("the doorman got %q, want %q", b, payload)
	}
	if want := append([]byte("reply:"), payload...); !bytes.Equal(reply, want) {
		t.Fatalf("the caller got %q, want %q", reply, want)
	}
	_ = c.Close()
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestReadyFailsWhenTheDoormanIsNotListening(t *testing.T) {
	r := &Relay{DoormanHost: "127.0.0.1", Mappings: []Mapping{{Listen: 1, Doorman: testnet.FreePort(t)}}, DialTimeout: time.Second}
	if err := r.Ready(context.Background()); err == nil {
		t.Fatal("Ready succeeded with nothing listening on the doorman port")
	}
}
