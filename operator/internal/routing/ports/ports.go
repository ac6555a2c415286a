// Package ports allocates doorman ports (20000-29999) to ManagedWorkloads:
// unique cluster-wide, never a port within its hold after release, and at
// most so many per workload and per namespace. It keeps no clock and no
// lock: the caller passes the time and serialises calls.
package ports

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

// Key names one ManagedWorkload.
type Key struct {
	Namespace, Name string
}

func (k Key) String() string { return k.Namespace + "/" + k.Name }

// Limits are the range and the caps.
type Limits struct {
	// Min and Max bound the range, both included.
	Min, Max int32
	// PerWorkload caps the ports one workload holds at once.
	PerWorkload int
	// PerNamespace caps the ports every workload of a namespace holds at
	// once.
	PerNamespace int
}

// Validate reports limits the allocator cannot work with.
func (l Limits) Validate() error {
	switch {
	case l.Min < 1 || l.Max > 65535 || l.Min > l.Max:
		return fmt.Errorf("port range %d-%d is not within 1-65535", l.Min, l.Max)
	case l.PerWorkload < 1:
		return fmt.Errorf("ports per workload must be at least 1, not %d", l.PerWorkload)
	case l.PerNamespace < l.PerWorkload:
		return fmt.Errorf("ports per namespace (%d) must be at least ports per workload (%d)", l.PerNamespace, l.PerWorkload)
	}
	return nil
}

// Errors of Assign.
var (
	// ErrTooManyPorts: the workload or its namespace would go over its cap.
	ErrTooManyPorts = errors.New("too many ports")
	// ErrNoFreePort: every port in the range is taken or held.
	ErrNoFreePort = errors.New("no free doorman port")
)

// Hold is a released port nobody may take until Until.
type Hold struct {
	Port  int32
	Until time.Time
}

// Allocator hands out ports. The zero value is not usable: use New.
type Allocator struct {
	limits  Limits
	owner   map[int32]Key
	byOwner map[Key]map[int32]bool
	holds   map[int32]time.Time
	next    int32
}

// New returns an empty allocator.
func New(l Limits) (*Allocator, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return &Allocator{
		limits:  l,
		owner:   map[int32]Key{},
		byOwner: map[Key]map[int32]bool{},
		holds:   map[int32]time.Time{},
		next:    l.Min,
	}, nil
}

// Observe records ports a workload already holds and holds it recorded, as
// read from its status at start. A port another workload already owns is
// not taken over; Observe returns those conflicts so the caller can route
// them afresh. Ports outside the range are ignored and returned too.
func (a *Allocator) Observe(k Key, owned []int32, holds []Hold) (conflicts []int32) {
	for _, p := range owned {
		if !a.inRange(p) {
			conflicts = append(conflicts, p)
			continue
		}
		if o, ok := a.owner[p]; ok && o != k {
			conflicts = append(conflicts, p)
			continue
		}
		a.take(k, p)
	}
	for _, h := range holds {
		if a.inRange(h.Port) && h.Until.After(a.holds[h.Port]) {
			a.holds[h.Port] = h.Until
		}
	}
	return conflicts
}

// Assign makes the workload's ports exactly keep (those of them it owns)
// plus fresh new ones, and returns the new ports in order. Ports it owned
// and does not keep are released, held until now+hold, and returned as
// holds. On error nothing changes. It is Claim and Settle at once, for a
// caller with nothing to persist in between.
func (a *Allocator) Assign(k Key, keep []int32, fresh int, now time.Time, hold time.Duration) (got []int32, released []Hold, err error) {
	got, err = a.Claim(k, keep, fresh, now)
	if err != nil {
		return nil, nil, err
	}
	return got, a.Settle(k, append(a.kept(k, keep), got...), now.Add(hold)), nil
}

// Claim gives the workload fresh new ports beside those it owns, checking
// the caps against keep (those of them it owns) plus fresh, and returns the
// new ports in order. It releases nothing: the ports the workload gives up
// stay its own until Settle, once the status without them is written, so a
// failed write leaves every port it may still claim claimed. On error
// nothing changes.
func (a *Allocator) Claim(k Key, keep []int32, fresh int, now time.Time) ([]int32, error) {
	fresh = max(fresh, 0)
	total := len(a.kept(k, keep)) + fresh
	if total > a.limits.PerWorkload {
		return nil, fmt.Errorf("%w: the workload would hold %d doorman ports, over the cap of %d per workload", ErrTooManyPorts, total, a.limits.PerWorkload)
	}
	if ns := a.namespaceCount(k) + total; ns > a.limits.PerNamespace {
		return nil, fmt.Errorf("%w: namespace %s would hold %d doorman ports, over the cap of %d per namespace", ErrTooManyPorts, k.Namespace, ns, a.limits.PerNamespace)
	}
	got, err := a.free(fresh, now)
	if err != nil {
		return nil, err
	}
	for _, p := range got {
		a.take(k, p)
	}
	return got, nil
}

// Giving returns the holds Settle(k, keep, until) would make, changing
// nothing: what a status write that gives those ports up records.
func (a *Allocator) Giving(k Key, keep []int32, until time.Time) []Hold {
	var out []Hold
	for _, p := range a.givenUp(k, keep) {
		out = append(out, Hold{Port: p, Until: laterOf(a.holds[p], until)})
	}
	return out
}

// Settle makes the workload's ports those of keep it owns, as a status
// write that succeeded recorded them: the others are released, each held
// until until, and returned as holds.
func (a *Allocator) Settle(k Key, keep []int32, until time.Time) []Hold {
	var out []Hold
	for _, p := range a.givenUp(k, keep) {
		out = append(out, a.release(k, p, until))
	}
	if len(a.byOwner[k]) == 0 {
		delete(a.byOwner, k)
	}
	return out
}

// givenUp returns, sorted, the workload's ports not in keep.
func (a *Allocator) givenUp(k Key, keep []int32) []int32 {
	var out []int32
	for p := range a.byOwner[k] {
		if !slices.Contains(keep, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Forgo gives back the workload's ports of ps, each held until until: ports
// it was given but that no status of its names (another's claim holds them).
func (a *Allocator) Forgo(k Key, ps []int32, until time.Time) {
	for _, p := range ps {
		if a.owner[p] == k {
			a.release(k, p, until)
		}
	}
}

// kept returns the ports of keep the workload owns, each once.
func (a *Allocator) kept(k Key, keep []int32) []int32 {
	seen := map[int32]bool{}
	var out []int32
	for _, p := range keep {
		if a.owner[p] == k && a.byOwner[k][p] && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Release gives back every port of the workload, each held until now+hold.
func (a *Allocator) Release(k Key, now time.Time, hold time.Duration) []Hold {
	var out []Hold
	for p := range a.byOwner[k] {
		out = append(out, a.release(k, p, now.Add(hold)))
	}
	delete(a.byOwner, k)
	sortHolds(out)
	return out
}

// Owned returns the workload's ports, sorted.
func (a *Allocator) Owned(k Key) []int32 {
	out := make([]int32, 0, len(a.byOwner[k]))
	for p := range a.byOwner[k] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Owner returns who owns the port, if anyone.
func (a *Allocator) Owner(p int32) (Key, bool) {
	k, ok := a.owner[p]
	return k, ok
}

// HeldUntil returns until when the port is held; the zero time if it is not.
func (a *Allocator) HeldUntil(p int32, now time.Time) time.Time {
	if u, ok := a.holds[p]; ok && u.After(now) {
		return u
	}
	return time.Time{}
}

// Expire forgets holds that are over.
func (a *Allocator) Expire(now time.Time) {
	for p, u := range a.holds {
		if !u.After(now) {
			delete(a.holds, p)
		}
	}
}

func (a *Allocator) inRange(p int32) bool { return p >= a.limits.Min && p <= a.limits.Max }

func (a *Allocator) take(k Key, p int32) {
	a.owner[p] = k
	if a.byOwner[k] == nil {
		a.byOwner[k] = map[int32]bool{}
	}
	a.byOwner[k][p] = true
	delete(a.holds, p)
}

func (a *Allocator) release(k Key, p int32, until time.Time) Hold {
	delete(a.owner, p)
	delete(a.byOwner[k], p)
	a.holds[p] = laterOf(a.holds[p], until)
	return Hold{Port: p, Until: a.holds[p]}
}

func (a *Allocator) namespaceCount(k Key) int {
	n := 0
	for o, ps := range a.byOwner {
		if o.Namespace == k.Namespace && o != k {
			n += len(ps)
		}
	}
	return n
}

// free finds n ports neither owned nor held, going round the range from
// after the last one handed out, so a released port is reused as late as
// possible.
func (a *Allocator) free(n int, now time.Time) ([]int32, error) {
	if n == 0 {
		return nil, nil
	}
	size := int(a.limits.Max-a.limits.Min) + 1
	var out []int32
	p := a.next
	for i := 0; i < size && len(out) < n; i++ {
		if _, owned := a.owner[p]; !owned && !a.holds[p].After(now) {
			out = append(out, p)
		}
		p++
		if p > a.limits.Max {
			p = a.limits.Min
		}
	}
	if len(out) < n {
		return nil, fmt.Errorf("%w: all %d doorman ports (%d-%d) are in use or held", ErrNoFreePort, size, a.limits.Min, a.limits.Max)
	}
	a.next = p
	return out, nil
}

func sortHolds(h []Hold) {
	sort.Slice(h, func(i, j int) bool { return h[i].Port < h[j].Port })
}
