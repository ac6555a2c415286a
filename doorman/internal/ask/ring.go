package ask

import (
	"strings"
	"time"
)

// SignDelay is how long after a switch every pod goes on signing with the
// previous key. Each pod reads the Secret at least once a minute, so by then
// every pod verifies the new key, and no click reaches a pod that does not
// know the key of its token. It is also the "within a minute" in which each
// pod starts using the new key (docs/design/ask.md#the-wake-key).
const SignDelay = time.Minute

// Overlap is how long a pod keeps accepting a key after its last token
// signed with it: the token's 10 minutes plus a minute of clock skew
// between pods (docs/design/ask.md#the-wake-key: "the previous key for 11
// minutes after a switch").
const Overlap = TokenLife + time.Minute

// maxOld bounds the keys a ring accepts besides its current one: its own
// last key and the Secret's previous one, and one more for a second
// rotation within Overlap.
const maxOld = 3

// Ring is the keys one doorman pod signs and verifies with. It is a value:
// Observe returns the next Ring, and the doorman swaps it in whole (an
// atomic.Pointer), so judging a click takes no lock. The zero Ring has no
// key; a pod with no key can show the asleep page with no working button
// only, so it reads the Secret before it serves Ask.
type Ring struct {
	current Key
	// signer signs instead of current until signUntil: the key every pod
	// still knows while current spreads.
	signer    Key
	signUntil time.Time
	old       [maxOld]oldKey
}

// oldKey is a key that still verifies until until.
type oldKey struct {
	key   Key
	until time.Time
}

// String names the ring's keys by their ids only, so logging a Ring never
// shows a key.
func (r Ring) String() string {
	var b strings.Builder
	b.WriteString("current " + r.current.ID)
	if r.signer.ID != "" {
		b.WriteString(", signing with " + r.signer.ID + " until " + r.signUntil.UTC().Format(time.RFC3339))
	}
	for _, o := range r.old {
		if o.key.ID != "" {
			b.WriteString(", accepting " + o.key.ID + " until " + o.until.UTC().Format(time.RFC3339))
		}
	}
	return b.String()
}

// Empty reports whether the ring holds no key.
func (r *Ring) Empty() bool { return r.current.ID == "" }

// Current is the key the Secret holds now, as this pod last read it.
func (r *Ring) Current() Key { return r.current }

// Signer returns the key to sign a token with at now: the previous key for
// SignDelay after a switch, while the new one spreads to every pod, then the
// current one. ok is false for an empty ring.
func (r *Ring) Signer(now time.Time) (k Key, ok bool) {
	if r.signer.ID != "" && now.Before(r.signUntil) {
		return r.signer, true
	}
	return r.current, !r.Empty()
}

// Accepts lists the ids of the keys that verify at now, current first.
func (r *Ring) Accepts(now time.Time) []string {
	var ids []string
	if !r.Empty() {
		ids = append(ids, r.current.ID)
	}
	for _, o := range r.old {
		if o.key.ID != "" && now.Before(o.until) {
			ids = append(ids, o.key.ID)
		}
	}
	return ids
}

// lookup returns the key with id that verifies at now.
func (r *Ring) lookup(id []byte, now time.Time) (Key, bool) {
	if !r.Empty() && string(id) == r.current.ID {
		return r.current, true
	}
	for _, o := range r.old {
		if o.key.ID != "" && string(id) == o.key.ID && now.Before(o.until) {
			return o.key, true
		}
	}
	return Key{}, false
}

// Observe returns the ring after this pod reads k from the Secret at now
// (at start, then at least once a minute, and after a Refill it wrote). The
// same current key changes nothing. A new one switches the pod:
//
//   - It verifies the new key at once.
//   - It signs with the Secret's previous key until SwitchedAt + SignDelay,
//     when every pod knows the new one; with no previous key, with the new
//     one at once.
//   - It accepts the Secret's previous key until SwitchedAt + SignDelay +
//     Overlap: 11 minutes after the last pod stopped signing with it.
//   - It accepts its own last key (the one it signed with until now, when
//     the Secret changed under it) until now + Overlap: 11 minutes after it
//     switched.
//   - Older keys it accepted keep their time.
//
// SwitchedAt is another pod's clock: one in the future counts as now, so a
// fast clock cannot hold the old key in use.
//
// A Secret deleted under a running doorman is not observed (Keys{} changes
// nothing either): the pod keeps its ring, since it cannot create the
// Secret, until the Secret is back.
func (r *Ring) Observe(k Keys, now time.Time) Ring {
	if k.Current.ID == "" || k.Current.ID == r.current.ID {
		return *r
	}
	at := k.SwitchedAt
	if at.IsZero() || at.After(now) {
		at = now
	}
	n := Ring{current: k.Current}
	if k.Previous.ID != "" {
		if stop := at.Add(SignDelay); now.Before(stop) {
			n.signer, n.signUntil = k.Previous, stop
		}
		n.accept(k.Previous, at.Add(SignDelay+Overlap), now)
	}
	if !r.Empty() {
		n.accept(r.current, now.Add(Overlap), now)
	}
	for _, o := range r.old {
		n.accept(o.key, o.until, now)
	}
	return n
}

// accept adds key as verifying until until, unless it is the current key
// or until has passed. A key already held keeps the later time; when the
// ring is full the key that stops soonest makes room.
func (r *Ring) accept(key Key, until, now time.Time) {
	if key.ID == "" || key.ID == r.current.ID || !now.Before(until) {
		return
	}
	free, soonest := -1, -1
	for i, o := range r.old {
		switch {
		case o.key.ID == key.ID:
			if until.After(o.until) {
				r.old[i].until = until
			}
			return
		case o.key.ID == "" || !now.Before(o.until):
			if free < 0 {
				free = i
			}
		case soonest < 0 || o.until.Before(r.old[soonest].until):
			soonest = i
		}
	}
	switch {
	case free >= 0:
		r.old[free] = oldKey{key: key, until: until}
	case until.After(r.old[soonest].until):
		r.old[soonest] = oldKey{key: key, until: until}
	}
}
