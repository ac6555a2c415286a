package deps

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzParseDependentsFrom feeds arbitrary Namespace annotation values
// (anyone who can edit a Namespace writes them). What must never happen: a
// panic; a namespace allowed that no item names (unless an item is "*");
// an allowed name that is not a DNS label; a problem message over 256 bytes
// or more than maxProblems+1 of them; String not reading back the same.
func FuzzParseDependentsFrom(f *testing.F) {
	f.Add("preview-42, preview-43", "preview-42")
	f.Add("*", "anything")
	f.Add(" ,,a,*,Bad_Name", "b")
	f.Add("", "")
	f.Add("a/b,\x00,é", "a")
	f.Fuzz(func(t *testing.T, v, ns string) {
		a, problems := ParseDependentsFrom(v)
		items := map[string]bool{}
		for _, item := range strings.Split(v, ",") {
			items[strings.TrimSpace(item)] = true
		}
		if a.Allows(ns) && !items["*"] && (!items[ns] || len(validation.IsDNS1123Label(ns)) > 0) {
			t.Fatalf("%q allows %q", v, ns)
		}
		if len(problems) > maxProblems+1 {
			t.Fatalf("%d problems", len(problems))
		}
		for _, p := range problems {
			if len(p) > 256 {
				t.Fatalf("problem of %d bytes", len(p))
			}
		}
		b, again := ParseDependentsFrom(a.String())
		if !a.equal(b) || len(again) > 0 {
			t.Fatalf("%q read back as %q (%v)", a.String(), b.String(), again)
		}
	})
}

// FuzzCallerOf feeds arbitrary last-request-from values and Pods. What must
// never happen: a panic; a caller found from a Pod that was not Running,
// was being deleted, was on the host network, was a forwarder, had no
// ManagedWorkload or the callee's, had no time it held the address or got
// it after the request, or does not hold the address.
func FuzzCallerOf(f *testing.F) {
	f.Add("10.0.0.5", "10.0.0.5", int64(-60), uint8(0))
	f.Add("::ffff:10.0.0.5", "10.0.0.5", int64(0), uint8(1))
	f.Add("fe80::1%eth0", "fe80::1", int64(5), uint8(0xff))
	f.Add("", "", int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, from, ip string, since int64, flags uint8) {
		p := Pod{
			Key: key("p/x"), IPs: []string{ip, "10.9.9.9"}, Phase: corev1.PodRunning,
			IPSince: t0.Add(time.Duration(since) * time.Millisecond), Workload: key("p/api"),
			Deleting: flags&1 != 0, HostNetwork: flags&2 != 0, Forwarder: flags&4 != 0,
		}
		if flags&8 != 0 {
			p.Phase = corev1.PodSucceeded
		}
		if flags&16 != 0 {
			p.Workload = Key{}
		}
		if flags&32 != 0 {
			p.Workload = key("p/db")
		}
		if flags&64 != 0 {
			p.IPSince = time.Time{}
		}
		c := CallerOf(from, t0, key("p/db"), []Pod{p})
		if !c.Found() {
			return
		}
		a, _ := parseAddr(from)
		if flags&0x7f != 0 || p.IPSince.Truncate(time.Second).After(t0) || !holds(&p, a) || c.Workload != key("p/api") {
			t.Fatalf("learned %v from %q and %+v", c, from, p)
		}
		if b, err := netip.ParseAddr(from); err != nil || b.Unmap().WithZone("") != a {
			t.Fatalf("%q is not the address %s", from, a)
		}
	})
}

// FuzzGraph runs arbitrary sequences of Upsert, Delete and SetNamespace on
// eight workloads in two namespaces and checks Wake and Hold against a
// brute-force reading of their definitions. What must never happen: a
// panic or a walk that does not end (cycles of every shape); a wake plan
// that lists the origin, a workload twice, a workload no honoured path
// reaches, or misses one; a refused edge whose target wakes; a hold the
// definition in the package doc does not give, or one it gives missed; a
// dependent's wake found (WokenBy) that no wake plan gives, or one missed.
func FuzzGraph(f *testing.F) {
	f.Add([]byte{0, 0, 0b10, 0, 0, 1, 0b1, 0})                       // a two-member cycle
	f.Add([]byte{0, 0, 0b10, 0b100, 8, 1, 0b100, 0, 3, 2, 1, 0})     // a chain, a namespace
	f.Add([]byte{0, 4, 0xff, 0xff, 2, 4, 0, 0, 0x20, 3, 0b10000, 0}) // everything, a deletion
	f.Add([]byte{0x20, 0, 0b10, 0b100, 0, 1, 0, 0, 8, 2, 0, 0})      // a woken chain with a learned edge
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4*64 {
			return
		}
		m := newModel()
		for i := 0; i+3 < len(ops); i += 4 {
			m.apply(ops[i], ops[i+1], ops[i+2], ops[i+3])
		}
		for _, x := range m.keys {
			m.checkWake(t, x)
			m.checkHold(t, x)
			m.checkWokenBy(t, x)
		}
	})
}
