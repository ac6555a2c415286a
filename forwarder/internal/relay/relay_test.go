package relay

import (
	"context"
	"testing"
	"time"

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

func TestReadyFailsWhenTheDoormanIsNotListening(t *testing.T) {
	r := &Relay{DoormanHost: "127.0.0.1", Mappings: []Mapping{{Listen: 1, Doorman: testnet.FreePort(t)}}, DialTimeout: time.Second}
	if err := r.Ready(context.Background()); err == nil {
		t.Fatal("Ready succeeded with nothing listening on the doorman port")
	}
}
