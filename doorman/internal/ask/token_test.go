package ask

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// t0 is the test's now; the pause began an hour before.
var (
	t0      = time.Date(2026, 10, 23, 18, 4, 12, 0, time.UTC)
	pausedA = t0.Add(-time.Hour)
)

const workload = "previews/pr-412"

func testKey(t testing.TB, fill byte) Key {
	t.Helper()
	k, err := KeyFrom(bytes.Repeat([]byte{fill}, MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// ringOf is a ring whose only key is k, as a pod has after reading a Secret
// that holds k alone.
func ringOf(t testing.TB, k Key) *Ring {
	t.Helper()
	r := (&Ring{}).Observe(Keys{Current: k}, t0.Add(-time.Hour))
	return &r
}

// fixture is the key most tests sign with, a ring of it alone and a token
// it signed at t0.
func fixture(t testing.TB) (Key, *Ring, string) {
	t.Helper()
	k := testKey(t, 1)
	return k, ringOf(t, k), Issue(k, workload, pausedA, t0)
}

func TestIssuedTokensVerify(t *testing.T) {
	_, ring, tok := fixture(t)
	other := testKey(t, 2)
	if len(tok) != 78 {
		t.Errorf("token is %d characters, want 78: %q", len(tok), tok)
	}
	cases := []struct {
		name     string
		tok      string
		ring     *Ring
		workload string
		pause    time.Time
		now      time.Time
		want     TokenVerdict
	}{
		{"a fresh token for this workload and pause is good", tok, ring, workload, pausedA, t0, TokenGood},
		{"a token 9 minutes 59 seconds old is good", tok, ring, workload, pausedA, t0.Add(TokenLife - time.Second), TokenGood},
		{"a token 10 minutes old has expired", tok, ring, workload, pausedA, t0.Add(TokenLife), TokenExpired},
		{"a token from an earlier pause is for the wrong pause", tok, ring, workload, pausedA.Add(50 * time.Minute), t0, TokenWrongPause},
		{"a token from an earlier pause that has also expired is for the wrong pause", tok, ring, workload, t0.Add(time.Hour), t0.Add(2 * time.Hour), TokenWrongPause},
		{"a token for another workload is forged", tok, ring, "previews/pr-413", pausedA, t0, TokenForged},
		{"a token signed with a key the ring does not hold has an unknown key", tok, ringOf(t, other), workload, pausedA, t0, TokenUnknownKey},
		{"a token checked against an empty ring has an unknown key", tok, &Ring{}, workload, pausedA, t0, TokenUnknownKey},
		{"a token checked against no ring has an unknown key", tok, nil, workload, pausedA, t0, TokenUnknownKey},
		{"a pause's start counts in whole seconds", tok, ring, workload, pausedA.Add(999 * time.Millisecond), t0, TokenGood},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Verify(tc.tok, tc.ring, tc.workload, tc.pause, tc.now); got != tc.want {
				t.Fatalf("Verify = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBadTokens(t *testing.T) {
	k, ring, tok := fixture(t)
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	with := func(i int, c byte) string {
		b := bytes.Clone(raw)
		b[i] = c
		return enc(b)
	}
	cases := []struct {
		name string
		tok  string
		want TokenVerdict
	}{
		{"an empty token is malformed", "", TokenMalformed},
		{"a token of 129 characters is malformed", strings.Repeat("A", MaxTokenLen+1), TokenMalformed},
		{"a megabyte of token is malformed", strings.Repeat("A", 1<<20), TokenMalformed},
		{"a token with padding is malformed", tok + "==", TokenMalformed},
		{"a token with a line end in it is malformed", tok[:10] + "\n" + tok[10:], TokenMalformed},
		{"a token in standard base64 is malformed", strings.ReplaceAll(strings.ReplaceAll(tok, "-", "+"), "_", "/") + "+", TokenMalformed},
		{"a token of markup is malformed", `"><script>alert(1)</script>`, TokenMalformed},
		{"a token of invalid UTF-8 is malformed", "\xff\xfe\xfd", TokenMalformed},
		{"a token with its last character dropped is malformed", tok[:len(tok)-1], TokenMalformed},
		{"a token with a byte more is malformed", enc(append(bytes.Clone(raw), 0)), TokenMalformed},
		{"a token of another version is malformed", with(0, 2), TokenMalformed},
		{"a token with a key id of length 0 is malformed", with(1, 0), TokenMalformed},
		{"a token with a key id longer than 16 is malformed", with(1, 17), TokenMalformed},
		{"a token of its fixed part only is malformed", enc(raw[:tokenFixed-1]), TokenMalformed},
		{"a token with another key id of the same length has an unknown key", with(2, raw[2]^1), TokenUnknownKey},
		{"a token with its expiry moved is forged", with(len(raw)-sha256Size-1, raw[len(raw)-sha256Size-1]^1), TokenForged},
		{"a token with its pause moved is forged", with(2+len(k.ID)+7, raw[2+len(k.ID)+7]^1), TokenForged},
		{"a token with its MAC changed is forged", with(len(raw)-1, raw[len(raw)-1]^1), TokenForged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Verify(tc.tok, ring, workload, pausedA, t0); got != tc.want {
				t.Fatalf("Verify(%.40q) = %v, want %v", tc.tok, got, tc.want)
			}
		})
	}
}

const sha256Size = 32

func TestNoKeyIssuesNoToken(t *testing.T) {
	for _, k := range []Key{{}, {ID: strings.Repeat("x", 17)}, {ID: "abc"}} {
		if tok := Issue(k, workload, pausedA, t0); tok != "" {
			t.Errorf("Issue(%v) = %q, want no token", k, tok)
		}
	}
}

func TestAHugeTokenAllocatesNothing(t *testing.T) {
	_, ring, _ := fixture(t)
	huge := strings.Repeat("A", 1<<20)
	if n := testing.AllocsPerRun(100, func() { Verify(huge, ring, workload, pausedA, t0) }); n != 0 {
		t.Fatalf("verifying a megabyte of token allocated %v times, want 0", n)
	}
}

// FuzzVerify: Verify must never panic, never call a token good unless it is
// exactly one Issue made (the fuzzer cannot forge a MAC, and each token has
// one spelling), and never call a token longer than MaxTokenLen anything
// but malformed.
func FuzzVerify(f *testing.F) {
	_, ring, good := fixture(f)
	for _, s := range []string{good, good[:40], good + "A", "", "AAAA", strings.Repeat("_", 100), "AQhrZXk"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		v := Verify(tok, ring, workload, pausedA, t0)
		if v == TokenGood && tok != good {
			t.Fatalf("Verify(%q) = good; only %q is", tok, good)
		}
		if len(tok) > MaxTokenLen && v != TokenMalformed {
			t.Fatalf("a token of %d characters is %v, want malformed", len(tok), v)
		}
		if v < TokenGood || v > TokenMalformed {
			t.Fatalf("verdict %v", v)
		}
	})
}

func TestTimesAreSignedAsRFC3339(t *testing.T) {
	for _, at := range []time.Time{t0, pausedA, {}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if got, want := string(appendRFC3339(nil, at.Unix())), at.UTC().Format(time.RFC3339); got != want {
			t.Errorf("appendRFC3339(%v) = %q, want %q", at, got, want)
		}
	}
}
