package addr

import (
	"errors"
	"net/netip"
	"testing"
)

func TestCheck(t *testing.T) {
	self := []netip.Addr{netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("fd00::7")}
	cases := []struct {
		name, addr string
		ok         bool
	}{
		{"an ordinary pod IPv4 address may be dialled", "10.244.1.5", true},
		{"an ordinary pod IPv6 address may be dialled", "fd00:10:244::5", true},
		{"a public IPv4 address may be dialled", "8.8.8.8", true},
		{"a 6to4 address embedding a pod address may be dialled", "2002:0af4:0105::1", true},
		{"IPv4 loopback is refused", "127.0.0.1", false},
		{"all of 127/8 is refused", "127.255.1.2", false},
		{"IPv6 loopback is refused", "::1", false},
		{"IPv6 loopback written out is refused", "0:0:0:0:0:0:0:1", false},
		{"IPv4-mapped loopback is refused", "::ffff:127.0.0.1", false},
		{"IPv4-mapped loopback in hex is refused", "::ffff:7f00:1", false},
		{"IPv4-compatible loopback is refused", "::127.0.0.1", false},
		{"NAT64 loopback is refused", "64:ff9b::127.0.0.1", false},
		{"NAT64 local-use /96 loopback is refused", "64:ff9b:1::7f00:1", false},
		{"NAT64 local-use /48 loopback is refused", "64:ff9b:1:7f00:0:100::", false},
		{"6to4 loopback is refused", "2002:7f00:1::1", false},
		{"Teredo with a loopback server is refused", "2001:0:7f00:1::1", false},
		{"Teredo with an obfuscated loopback client is refused", "2001:0:0a00:1:0:0:80ff:fffe", false},
		{"IPv4 unspecified is refused", "0.0.0.0", false},
		{"anything in 0/8 is refused", "0.1.2.3", false},
		{"IPv6 unspecified is refused", "::", false},
		{"IPv4-mapped unspecified is refused", "::ffff:0.0.0.0", false},
		{"broadcast is refused", "255.255.255.255", false},
		{"class E is refused", "240.0.0.1", false},
		{"IPv4 multicast is refused", "224.0.0.1", false},
		{"IPv4 multicast high is refused", "239.255.255.250", false},
		{"IPv6 multicast is refused", "ff02::1", false},
		{"IPv6 global multicast is refused", "ff0e::1", false},
		{"IPv4 link-local is refused", "169.254.1.1", false},
		{"IPv6 link-local is refused", "fe80::1", false},
		{"IPv6 link-local with a zone is refused", "fe80::1%eth0", false},
		{"a global address with a zone is refused", "fd00::5%eth0", false},
		{"deprecated site-local is refused", "fec0::1", false},
		{"AWS/GCP metadata is refused", "169.254.169.254", false},
		{"AWS IPv6 metadata is refused", "fd00:ec2::254", false},
		{"Alibaba metadata is refused", "100.100.100.200", false},
		{"Azure wire server is refused", "168.63.129.16", false},
		{"GCP IPv6 metadata is refused", "fd20:ce::254", false},
		{"Oracle Cloud metadata is refused", "192.0.0.192", false},
		{"the rest of the IETF's 192.0.0.0/24 is refused", "192.0.0.170", false},
		{"an address just past 192.0.0.0/24 may be dialled", "192.0.1.1", true},
		{"SIIT IPv4-translated loopback is refused", "::ffff:0:127.0.0.1", false},
		{"SIIT IPv4-translated metadata is refused", "::ffff:0:a9fe:a9fe", false},
		{"SIIT IPv4-translated pod address may be dialled", "::ffff:0:10.244.1.5", true},
		{"NAT64 Oracle metadata is refused", "64:ff9b::c000:c0", false},
		{"IPv4-mapped Azure wire server is refused", "::ffff:168.63.129.16", false},
		{"IPv4-compatible Alibaba metadata is refused", "::100.100.100.200", false},
		{"NAT64 metadata is refused", "64:ff9b::a9fe:a9fe", false},
		{"6to4 metadata is refused", "2002:a9fe:a9fe::1", false},
		{"Teredo obfuscated metadata client is refused", "2001:0:0a00:1:0:0:5601:5601", false},
		{"the doorman's own IPv4 address is refused", "10.0.0.7", false},
		{"the doorman's own IPv4 address, mapped, is refused", "::ffff:10.0.0.7", false},
		{"the doorman's own IPv6 address is refused", "fd00::7", false},
		{"the doorman's own address through NAT64 is refused", "64:ff9b::a00:7", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := netip.ParseAddr(tc.addr)
			if err != nil {
				t.Fatalf("parsing %q: %v", tc.addr, err)
			}
			err = Rules{Self: self}.Check(a)
			if tc.ok && err != nil {
				t.Fatalf("Check(%s) = %v, want allowed", a, err)
			}
			if !tc.ok && !errors.Is(err, ErrForbidden) {
				t.Fatalf("Check(%s) = %v, want ErrForbidden", a, err)
			}
		})
	}
}

func TestAllowLoopbackOnlyLetsLoopbackThrough(t *testing.T) {
	r := Rules{AllowLoopback: true}
	for _, s := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.2"} {
		if err := r.Check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("with AllowLoopback, Check(%s) = %v, want allowed", s, err)
		}
	}
	for _, s := range []string{"169.254.169.254", "0.0.0.0", "::", "fe80::1", "224.0.0.1"} {
		if err := r.Check(netip.MustParseAddr(s)); err == nil {
			t.Errorf("with AllowLoopback, Check(%s) allowed, want refused", s)
		}
	}
}

func TestCheckAddrPortRefusesPortZero(t *testing.T) {
	if err := (Rules{}).CheckAddrPort(netip.MustParseAddrPort("10.1.2.3:0")); !errors.Is(err, ErrForbidden) {
		t.Fatalf("port 0: got %v, want ErrForbidden", err)
	}
	if err := (Rules{}).CheckAddrPort(netip.MustParseAddrPort("10.1.2.3:8080")); err != nil {
		t.Fatalf("10.1.2.3:8080: got %v, want allowed", err)
	}
}

// FuzzCheck: an address Check allows must never be, nor embed, a forbidden
// IPv4 address, must never reach this host when the kernel is asked (run as
// root: see TestMain), and Check must never panic.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"10.1.2.3", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "2001:0:7f00:1::1", "fe80::1%lo", "fd00:ec2::254", "::", "garbage",
		"::ffff:0:7f00:1", "fd20:ce::254", "192.0.0.192", "::ffff:7f01:203"} {
		f.Add(s)
	}
	reaches := kernelOracle(f)
	f.Fuzz(func(t *testing.T, s string) {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return
		}
		r := Rules{}
		if r.Check(a) != nil {
			return
		}
		for _, c := range candidates(a) {
			if c.IsLoopback() || c.IsUnspecified() || c.IsMulticast() || c.IsLinkLocalUnicast() || c.IsLinkLocalMulticast() || c.IsInterfaceLocalMulticast() {
				t.Fatalf("Check(%s) allowed, but %s is forbidden", a, c)
			}
		}
		if a.Unmap().Is4() && r.Check(a.Unmap()) != nil {
			t.Fatalf("Check(%s) allowed, but its IPv4 form %s is refused", a, a.Unmap())
		}
		reaches(t, a)
	})
}
