package ask

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// TokenLife is how long a Wake it button is good for
// (docs/design/ask.md#the-wake-it-token: 10 minutes); the page reloads every minute, so a
// page whose reloads work always carries a fresh one.
const TokenLife = 10 * time.Minute

// MaxTokenLen bounds a token's text. A token is 78 characters with the
// 8-character key ids this package makes (88 with the longest, 16); anything
// longer is malformed without being decoded, so a huge input costs nothing.
const MaxTokenLen = 128

// tokenVersion is the token layout's first byte.
const tokenVersion = 1

// macDomain separates this MAC's input from any other use of the key.
const macDomain = "napwake.dev/wake-token\x00"

// token layout, before base64url: version, key id length, key id, the
// pause's start and the expiry in Unix seconds (big-endian int64), and the
// HMAC-SHA256 of macInput.
const (
	tokenFixed  = 2 + 8 + 8 + sha256.Size
	maxTokenRaw = tokenFixed + MaxKeyIDLen
)

// tokenEncoding is base64url without padding: the token goes into a form
// field and a URL-encoded body without escaping.
var tokenEncoding = base64.RawURLEncoding.Strict()

// TokenVerdict is what checking a posted token says.
type TokenVerdict int

const (
	// TokenNone: no token was checked (the request was judged before).
	TokenNone TokenVerdict = iota
	// TokenGood: signed by a key the ring accepts, for this workload and
	// this pause, and not expired.
	TokenGood
	// TokenExpired: genuine, for this pause, but past its 10 minutes.
	TokenExpired
	// TokenWrongPause: genuine, for this workload, but signed for another
	// (an earlier) pause.
	TokenWrongPause
	// TokenUnknownKey: well formed, but its key id is not one the ring
	// accepts now (rotated out, or a key this pod has not read yet).
	TokenUnknownKey
	// TokenForged: well formed, a known key id, but its MAC does not match:
	// altered, or signed for another workload.
	TokenForged
	// TokenMalformed: empty, too long, not base64url or not the layout.
	TokenMalformed
)

var tokenVerdictNames = [...]string{"None", "Good", "Expired", "WrongPause", "UnknownKey", "Forged", "Malformed"}

// String names the verdict.
func (v TokenVerdict) String() string {
	if v >= 0 && int(v) < len(tokenVerdictNames) {
		return tokenVerdictNames[v]
	}
	return "TokenVerdict(?)"
}

// Issue returns the token for a Wake it button: signed with k for
// workload ("namespace/name") and the pause that began at pausedAt
// (status.pause.startedAt), good until now + TokenLife. Times count in
// whole seconds, as the API stores them. A Key KeyFrom did not make (the
// zero Key an empty ring's Signer returns) gives "", which verifies as
// malformed.
func Issue(k Key, workload string, pausedAt, now time.Time) string {
	if k.ID == "" || len(k.ID) > MaxKeyIDLen || len(k.secret) == 0 {
		return ""
	}
	var raw [maxTokenRaw]byte
	b := append(raw[:0], tokenVersion, byte(len(k.ID)))
	b = append(b, k.ID...)
	b = binary.BigEndian.AppendUint64(b, uint64(pausedAt.Unix()))
	b = binary.BigEndian.AppendUint64(b, uint64(now.Add(TokenLife).Unix()))
	mac := sign(k, workload, pausedAt.Unix(), now.Add(TokenLife).Unix())
	b = append(b, mac[:]...)
	var text [MaxTokenLen]byte
	n := tokenEncoding.EncodedLen(len(b))
	tokenEncoding.Encode(text[:n], b)
	return string(text[:n])
}

// Verify checks tok, as posted, against the workload and the pause that
// began at pausedAt, with the keys ring accepts at now. It never panics and
// allocates nothing that grows with tok: a token longer than MaxTokenLen is
// malformed without being decoded, as is one with any character outside
// base64url's alphabet, so each token has one spelling. The MAC is
// compared in constant time.
//
// The checks run in this order, so each verdict means what it says: layout
// (Malformed), key id (UnknownKey), MAC (Forged), pause (WrongPause),
// expiry (Expired).
func Verify(tok string, ring *Ring, workload string, pausedAt, now time.Time) TokenVerdict {
	if tok == "" || len(tok) > MaxTokenLen || !isBase64URL(tok) {
		return TokenMalformed
	}
	if ring == nil {
		ring = &Ring{}
	}
	var raw [MaxTokenLen]byte // base64 decodes to less than its text
	n, err := tokenEncoding.Decode(raw[:], []byte(tok))
	if err != nil || n < tokenFixed || raw[0] != tokenVersion {
		return TokenMalformed
	}
	idLen := int(raw[1])
	if idLen == 0 || idLen > MaxKeyIDLen || n != tokenFixed+idLen {
		return TokenMalformed
	}
	b := raw[2:n]
	id := b[:idLen]
	pause := int64(binary.BigEndian.Uint64(b[idLen:]))
	expiry := int64(binary.BigEndian.Uint64(b[idLen+8:]))
	got := b[idLen+16:]
	k, ok := ring.lookup(id, now)
	if !ok {
		return TokenUnknownKey
	}
	if want := sign(k, workload, pause, expiry); !hmac.Equal(got, want[:]) {
		return TokenForged
	}
	if pause != pausedAt.Unix() {
		return TokenWrongPause
	}
	if now.Unix() >= expiry {
		return TokenExpired
	}
	return TokenGood
}

// isBase64URL reports whether s holds only base64url's alphabet: the
// decoder skips line ends, so without this check one token would have many
// spellings.
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// sign returns the HMAC-SHA256, with k, of the workload, the pause and the
// expiry (both as RFC 3339 UTC), each length-prefixed after a domain and
// the key id, so no two inputs share an encoding.
func sign(k Key, workload string, pause, expiry int64) [sha256.Size]byte {
	s := k.mac()
	defer k.release(s)
	m := s.msg[:0]
	m = append(m, macDomain...)
	m = appendField(m, k.ID)
	m = appendField(m, workload)
	m = appendTime(m, pause)
	m = appendTime(m, expiry)
	s.msg = m[:0]
	s.h.Write(m)
	s.h.Sum(s.sum[:0])
	return s.sum
}

func appendField[T string | []byte](b []byte, s T) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, unix int64) []byte {
	var t [40]byte
	return appendField(b, appendRFC3339(t[:0], unix))
}

// appendRFC3339 appends unix as time.RFC3339 in UTC, as AppendFormat does,
// by hand for the years 0 to 9999 (AppendFormat costs more than the MAC).
func appendRFC3339(b []byte, unix int64) []byte {
	t := time.Unix(unix, 0).UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(b, time.RFC3339)
	}
	h, mi, s := t.Clock()
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-')
	for _, v := range [...]struct {
		n   int
		sep byte
	}{{int(mo), '-'}, {d, 'T'}, {h, ':'}, {mi, ':'}, {s, 'Z'}} {
		b = append(b, byte('0'+v.n/10), byte('0'+v.n%10), v.sep)
	}
	return b
}
