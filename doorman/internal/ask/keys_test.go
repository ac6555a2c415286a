package ask

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestParseSecret(t *testing.T) {
	k, p := testKey(t, 1), testKey(t, 2)
	full := Keys{Current: k, Previous: p, SwitchedAt: t0}.Data()
	cases := []struct {
		name    string
		data    map[string][]byte
		want    Keys
		wantErr string // "" for none; ErrEmpty's text for ErrEmpty
	}{
		{"no data is empty", nil, Keys{}, ErrEmpty.Error()},
		{"an emptied Secret is empty", map[string][]byte{}, Keys{}, ErrEmpty.Error()},
		{"a key alone, as written by hand, is the current key", map[string][]byte{"key": bytes.Repeat([]byte{1}, 32)}, Keys{Current: k}, ""},
		{"a key, its previous one and the switch are read back", full, Keys{Current: k, Previous: p, SwitchedAt: t0}, ""},
		{"entries a later version adds are ignored", map[string][]byte{"key": bytes.Repeat([]byte{1}, 32), "algorithm": []byte("x")}, Keys{Current: k}, ""},
		{"a key of 31 bytes is garbage", map[string][]byte{"key": make([]byte, 31)}, Keys{}, `"key": a wake key is 31 bytes, want 32 to 64`},
		{"a key of 65 bytes is garbage", map[string][]byte{"key": make([]byte, 65)}, Keys{}, `"key": a wake key is 65 bytes, want 32 to 64`},
		{"data without a key is garbage", map[string][]byte{"foo": []byte("bar")}, Keys{}, `no "key" entry`},
		{"a switch time that is not RFC 3339 is garbage", map[string][]byte{"key": bytes.Repeat([]byte{1}, 32), "switched-at": []byte("yesterday")}, Keys{}, `"switched-at"`},
		{"a previous key without its switch time is garbage", map[string][]byte{"key": bytes.Repeat([]byte{1}, 32), "previous-key": bytes.Repeat([]byte{2}, 32)}, Keys{}, `"previous-key" without "switched-at"`},
		{"a previous key of the wrong size is garbage", map[string][]byte{"key": bytes.Repeat([]byte{1}, 32), "previous-key": []byte("x"), "switched-at": []byte("2026-10-23T18:04:12Z")}, Keys{}, `"previous-key": a wake key is 1 bytes`},
		{"a previous key that is the key is garbage", map[string][]byte{"key": bytes.Repeat([]byte{1}, 32), "previous-key": bytes.Repeat([]byte{1}, 32), "switched-at": []byte("2026-10-23T18:04:12Z")}, Keys{}, `"previous-key" is "key"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSecret(tc.data)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ParseSecret: %v", err)
			case tc.wantErr == ErrEmpty.Error() && !errors.Is(err, ErrEmpty):
				t.Fatalf("ParseSecret: %v, want ErrEmpty", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ParseSecret: %v, want an error with %q", err, tc.wantErr)
			}
			if got.Current.ID != tc.want.Current.ID || got.Previous.ID != tc.want.Previous.ID || !got.SwitchedAt.Equal(tc.want.SwitchedAt) {
				t.Fatalf("ParseSecret = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	k := testKey(t, 1)
	if len(k.ID) != 8 || k.ID == testKey(t, 2).ID || k.ID != testKey(t, 1).ID {
		t.Errorf("key ids %q, %q: want 8 characters, the same for the same key and different for another", k.ID, testKey(t, 2).ID)
	}
	if s := k.String(); s != "key "+k.ID {
		t.Errorf("String() = %q, want only the id", s)
	}
	n, err := NewKey(bytes.NewReader(bytes.Repeat([]byte{1}, 64)))
	if err != nil || n.ID != k.ID {
		t.Errorf("NewKey read from rnd: %v, %v; want the key of its 32 bytes", n, err)
	}
	if _, err := NewKey(iotest.ErrReader(errors.New("no entropy"))); err == nil || !strings.Contains(err.Error(), "no entropy") {
		t.Errorf("NewKey on a failing reader: %v, want its error", err)
	}
}

func TestRefill(t *testing.T) {
	rnd := bytes.NewReader(bytes.Repeat([]byte{3}, 64))
	fresh, err := Refill(&Ring{}, t0.Add(500*time.Millisecond), rnd)
	if err != nil || fresh.Current.ID != testKey(t, 3).ID || fresh.Previous.ID != "" || !fresh.SwitchedAt.Equal(t0) {
		t.Fatalf("refilling from an empty ring: %+v, %v; want a fresh key, no previous one, switched at %v", fresh, err, t0)
	}
	k1 := testKey(t, 1)
	again, err := Refill(ringOf(t, k1), t0, rnd)
	if err != nil || again.Current.ID != testKey(t, 3).ID || again.Previous.ID != k1.ID {
		t.Fatalf("refilling with a key held: %+v, %v; want the held key kept as the previous one", again, err)
	}
	if back, err := ParseSecret(again.Data()); err != nil || back.Current.ID != again.Current.ID || back.Previous.ID != k1.ID || !back.SwitchedAt.Equal(t0) {
		t.Fatalf("a refilled Secret reads back as %+v, %v", back, err)
	}
}

func TestRing(t *testing.T) {
	k1, k2, k3 := testKey(t, 1), testKey(t, 2), testKey(t, 3)
	switched := Keys{Current: k2, Previous: k1, SwitchedAt: t0}
	old := ringOf(t, k1)
	switcher := old.Observe(switched, t0)
	late := old.Observe(switched, t0.Add(50*time.Second))
	newcomer := (&Ring{}).Observe(switched, t0.Add(3*time.Minute))
	thrice := switcher.Observe(Keys{Current: k3, Previous: k2, SwitchedAt: t0.Add(2 * time.Minute)}, t0.Add(2*time.Minute))
	cases := []struct {
		name    string
		ring    Ring
		at      time.Duration // after t0
		signer  string
		accepts []string
	}{
		{"a pod that reads the only key signs and verifies with it", *ringOf(t, k1), 0, k1.ID, []string{k1.ID}},
		{"a pod that switches verifies the new key at once and signs with the old one", switcher, 0, k1.ID, []string{k2.ID, k1.ID}},
		{"a minute after the switch every pod signs with the new key", switcher, time.Minute, k2.ID, []string{k2.ID, k1.ID}},
		{"the old key is accepted until 12 minutes after the switch", switcher, 12*time.Minute - time.Second, k2.ID, []string{k2.ID, k1.ID}},
		{"12 minutes after the switch the old key is no longer accepted", switcher, 12 * time.Minute, k2.ID, []string{k2.ID}},
		{"a pod that reads the switch late accepts its old key 11 minutes after it switched", late, 11*time.Minute + 49*time.Second, k2.ID, []string{k2.ID, k1.ID}},
		{"a pod that reads the switch late stops 11 minutes after it switched", late, 12*time.Minute + 50*time.Second, k2.ID, []string{k2.ID}},
		{"a pod started after the switch signs with the new key and accepts the previous one", newcomer, 3 * time.Minute, k2.ID, []string{k2.ID, k1.ID}},
		{"a pod started after the switch stops accepting the previous one 12 minutes after it", newcomer, 12 * time.Minute, k2.ID, []string{k2.ID}},
		{"a second switch within the overlap keeps both older keys", thrice, 2 * time.Minute, k2.ID, []string{k3.ID, k2.ID, k1.ID}},
		{"a Secret deleted under the doorman, read as no keys, changes nothing", switcher.Observe(Keys{}, t0.Add(5*time.Minute)), 0, k1.ID, []string{k2.ID, k1.ID}},
		{"the same key read again changes nothing", switcher.Observe(switched, t0.Add(5*time.Minute)), 0, k1.ID, []string{k2.ID, k1.ID}},
		{"a switch time in the future counts as now", old.Observe(Keys{Current: k2, Previous: k1, SwitchedAt: t0.Add(time.Hour)}, t0), 59 * time.Second, k1.ID, []string{k2.ID, k1.ID}},
		{"a switch read long after it happened signs with the new key at once", old.Observe(Keys{Current: k2, Previous: k1, SwitchedAt: t0.Add(-time.Hour)}, t0), 0, k2.ID, []string{k2.ID, k1.ID}},
		{"a Secret filled by a pod with no key signs with the new key at once", old.Observe(Keys{Current: k2, SwitchedAt: t0}, t0), 0, k2.ID, []string{k2.ID, k1.ID}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(tc.at)
			s, ok := tc.ring.Signer(now)
			if !ok || s.ID != tc.signer {
				t.Errorf("Signer = %v, %v; want %s", s, ok, tc.signer)
			}
			if got := strings.Join(tc.ring.Accepts(now), ","); got != strings.Join(tc.accepts, ",") {
				t.Errorf("Accepts = %s, want %s", got, strings.Join(tc.accepts, ","))
			}
		})
	}
	if s := switcher.String(); strings.Contains(s, string(bytes.Repeat([]byte{1}, 4))) || !strings.Contains(s, k1.ID) || !strings.Contains(s, k2.ID) {
		t.Errorf("a ring prints as %q: want its key ids and no key", s)
	}
	if _, ok := (&Ring{}).Signer(t0); ok {
		t.Error("an empty ring has a signer")
	}
}

// TestEmptyingTheSecretRotatesTheKey plays the rotation on three pods that
// each read the Secret once a minute, at their own second: every token any
// pod signs verifies on every pod for its 10 minutes, each pod signs with
// the new key within a minute, and 13 minutes on the old key is gone.
func TestEmptyingTheSecretRotatesTheKey(t *testing.T) {
	k1 := testKey(t, 1)
	pods := []*Ring{ringOf(t, k1), ringOf(t, k1), ringOf(t, k1)}
	offsets := []time.Duration{10 * time.Second, 30 * time.Second, 55 * time.Second}
	secret := Keys{Current: k1}.Data()
	rnd := bytes.NewReader(bytes.Repeat([]byte{9}, 64))
	type issued struct {
		tok string
		at  time.Time
	}
	var toks []issued
	emptied := t0.Add(5 * time.Second)
	for s := time.Duration(0); s < 14*time.Minute; s += time.Second {
		now := t0.Add(s)
		if now.Equal(emptied) {
			secret = nil
		}
		for i, r := range pods {
			if s%time.Minute != offsets[i] {
				continue
			}
			keys, err := ParseSecret(secret)
			if err != nil {
				if keys, err = Refill(r, now, rnd); err != nil {
					t.Fatal(err)
				}
				secret = keys.Data()
			}
			*r = r.Observe(keys, now)
		}
		for i, r := range pods {
			k, _ := r.Signer(now)
			if s%(15*time.Second) == 0 {
				toks = append(toks, issued{Issue(k, workload, pausedA, now), now})
			}
			if s == time.Minute+offsets[i] && k.ID == k1.ID {
				t.Errorf("pod %d still signs with the old key a minute after the switch", i)
			}
		}
		for _, tk := range toks {
			if now.Sub(tk.at) >= TokenLife {
				continue
			}
			for i, r := range pods {
				if v := Verify(tk.tok, r, workload, pausedA, now); v != TokenGood {
					t.Fatalf("at %v a token signed at %v is %v on pod %d", s, tk.at.Sub(t0), v, i)
				}
			}
		}
	}
	for i, r := range pods {
		if got := r.Accepts(t0.Add(14 * time.Minute)); len(got) != 1 || got[0] == k1.ID {
			t.Errorf("pod %d accepts %v 14 minutes on, want the new key alone", i, got)
		}
	}
}
