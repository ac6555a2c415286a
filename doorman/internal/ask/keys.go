package ask

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"
)

// The wake key Secret's data (the chart creates it empty; the first doorman
// pod to find it empty or unreadable fills it). Entries other than these are
// ignored, so a later version may add its own.
//
//	key           the current key: 32 to 64 bytes, made of 32 random bytes
//	previous-key  the key it replaced, when a doorman pod that knew one
//	              filled the Secret: still accepted for a while (Ring)
//	switched-at   RFC 3339: when key replaced previous-key
//
// A key's id is not stored: it is derived from the key (KeyFrom), so a
// Secret can never hold a key under the wrong id, and a key written by
// hand (or by an older doorman) needs nothing beside it.
const (
	DataKey         = "key"
	DataPreviousKey = "previous-key"
	DataSwitchedAt  = "switched-at"
)

// Key sizes: 32 bytes is SHA-256's output, the strength HMAC-SHA256 gives;
// 64 is its block size, beyond which HMAC would hash the key first.
const (
	MinKeyBytes = 32
	MaxKeyBytes = 64
)

// MaxKeyIDLen bounds a key id in a token. The ids KeyFrom derives are 8
// characters.
const MaxKeyIDLen = 16

// keyIDDomain separates the id's hash from any other use of the key.
const keyIDDomain = "napwake.dev/wake-key-id\x00"

// ErrEmpty says the Secret holds no data at all: the chart's empty Secret,
// or one emptied to rotate the key. Fill it (Refill).
var ErrEmpty = errors.New("the wake key Secret is empty")

// Key is one signing key and its id. The zero Key is no key.
type Key struct {
	// ID goes into every token the key signs: 8 base64url characters of
	// the SHA-256 of the key, which tells keys apart and gives nothing of
	// the key away.
	ID     string
	secret []byte
	// macs holds HMAC-SHA256 states keyed with secret, reset between uses,
	// so a token costs no key setup and no allocation.
	macs *sync.Pool
}

// String names the key by its id only, so logging a Key never shows it.
func (k Key) String() string { return "key " + k.ID }

// KeyFrom makes a Key of secret, which must be MinKeyBytes to MaxKeyBytes
// long. It keeps its own copy.
func KeyFrom(secret []byte) (Key, error) {
	if len(secret) < MinKeyBytes || len(secret) > MaxKeyBytes {
		return Key{}, fmt.Errorf("a wake key is %d bytes, want %d to %d", len(secret), MinKeyBytes, MaxKeyBytes)
	}
	sum := sha256.Sum256(append([]byte(keyIDDomain), secret...))
	own := append([]byte(nil), secret...)
	return Key{
		ID:     base64.RawURLEncoding.EncodeToString(sum[:6]),
		secret: own,
		macs:   &sync.Pool{New: func() any { return newMACState(own) }},
	}, nil
}

// macState is one HMAC-SHA256 keyed with a Key, and room for a message and
// its sum, so signing allocates nothing.
type macState struct {
	h   hash.Hash
	msg []byte
	sum [sha256.Size]byte
}

func newMACState(secret []byte) *macState {
	return &macState{h: hmac.New(sha256.New, secret), msg: make([]byte, 0, 512)}
}

// mac returns a state keyed with k, ready to write; give it back with
// release.
func (k Key) mac() *macState {
	if k.macs == nil {
		return newMACState(k.secret)
	}
	if m, ok := k.macs.Get().(*macState); ok {
		return m
	}
	return newMACState(k.secret)
}

// release resets m and gives it back to k's pool.
func (k Key) release(m *macState) {
	if k.macs != nil {
		m.h.Reset()
		k.macs.Put(m)
	}
}

// NewKey makes a fresh key of MinKeyBytes read from rnd (crypto/rand.Reader
// in the doorman).
func NewKey(rnd io.Reader) (Key, error) {
	b := make([]byte, MinKeyBytes)
	if _, err := io.ReadFull(rnd, b); err != nil {
		return Key{}, fmt.Errorf("reading a random wake key: %w", err)
	}
	return KeyFrom(b)
}

// Keys is what the wake key Secret holds.
type Keys struct {
	Current Key
	// Previous is the key Current replaced; zero when none is kept.
	Previous Key
	// SwitchedAt is when Current replaced Previous; zero when not known.
	SwitchedAt time.Time
}

// ParseSecret reads the Secret's data. It returns ErrEmpty for no data, and
// an error naming the entry for anything unreadable (a key of the wrong
// size, a previous key without its time, a time that is not RFC 3339): the
// doorman then fills the Secret afresh, as for an empty one. It never
// panics, whatever data holds.
func ParseSecret(data map[string][]byte) (Keys, error) {
	if len(data) == 0 {
		return Keys{}, ErrEmpty
	}
	raw, ok := data[DataKey]
	if !ok {
		return Keys{}, fmt.Errorf("reading the wake key Secret: no %q entry", DataKey)
	}
	var k Keys
	var err error
	if k.Current, err = KeyFrom(raw); err != nil {
		return Keys{}, fmt.Errorf("reading the wake key Secret's %q: %w", DataKey, err)
	}
	if at, ok := data[DataSwitchedAt]; ok {
		if k.SwitchedAt, err = time.Parse(time.RFC3339, string(at)); err != nil {
			return Keys{}, fmt.Errorf("reading the wake key Secret's %q: %w", DataSwitchedAt, err)
		}
	}
	prev, ok := data[DataPreviousKey]
	if !ok {
		return k, nil
	}
	if k.Previous, err = KeyFrom(prev); err != nil {
		return Keys{}, fmt.Errorf("reading the wake key Secret's %q: %w", DataPreviousKey, err)
	}
	switch {
	case k.SwitchedAt.IsZero():
		return Keys{}, fmt.Errorf("reading the wake key Secret: %q without %q", DataPreviousKey, DataSwitchedAt)
	case k.Previous.ID == k.Current.ID:
		return Keys{}, fmt.Errorf("reading the wake key Secret: %q is %q", DataPreviousKey, DataKey)
	}
	return k, nil
}

// Data is the Secret data that holds k, for the doorman's
// resourceVersion-guarded update.
func (k Keys) Data() map[string][]byte {
	d := map[string][]byte{DataKey: append([]byte(nil), k.Current.secret...)}
	if !k.SwitchedAt.IsZero() {
		d[DataSwitchedAt] = []byte(k.SwitchedAt.UTC().Format(time.RFC3339))
	}
	if k.Previous.ID != "" {
		d[DataPreviousKey] = append([]byte(nil), k.Previous.secret...)
	}
	return d
}

// Refill returns what to write to a Secret found empty (or unreadable) at
// now: a fresh key from rnd, with the ring's current key kept as the
// previous one, so the tokens it signed keep verifying on every pod and
// every pod goes on signing with it while the new one spreads (Ring). Write
// Data() guarded by the resourceVersion read: if another pod wrote first,
// read the Secret again and Observe what it holds instead, so every pod
// agrees on one key.
func Refill(r *Ring, now time.Time, rnd io.Reader) (Keys, error) {
	k, err := NewKey(rnd)
	if err != nil {
		return Keys{}, err
	}
	out := Keys{Current: k, SwitchedAt: now.Truncate(time.Second)}
	if old := r.current; old.ID != "" && old.ID != k.ID {
		out.Previous = old
	}
	return out, nil
}
