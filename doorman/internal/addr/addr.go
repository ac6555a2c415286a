// Package addr holds the doorman's dial rules
// (docs/design/security.md#dial-rules): the
// addresses it may never connect to, whatever spelling they come in.
//
// An address is refused when it, or any IPv4 address embedded in it
// (IPv4-mapped, IPv4-translated (SIIT) and IPv4-compatible IPv6, NAT64,
// 6to4, Teredo), is loopback, unspecified, link-local, multicast, broadcast,
// in 0.0.0.0/8 or 192.0.0.0/24, a cloud metadata address, or one of the
// caller's own addresses. Addresses with an IPv6 zone are refused too: a
// zone only means something on a link.
//
// The table is checked two ways: by hand-written cases, and by a fuzz target
// that, inside a network namespace of its own, asks the kernel whether a
// connect to each allowed address would reach this host.
package addr

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
)

// ErrForbidden is wrapped by every refusal of Rules.Check.
var ErrForbidden = errors.New("address not allowed")

// Metadata lists the cloud metadata addresses never dialled: AWS, GCP,
// Azure, OpenStack and most others (169.254.169.254, also link-local), AWS's
// IPv6 IMDS (fd00:ec2::254), GCP's IPv6 metadata server (fd20:ce::254),
// Oracle Cloud's (192.0.0.192, also in 192.0.0.0/24), Alibaba Cloud
// (100.100.100.200) and Azure's wire server (168.63.129.16).
var Metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("fd20:ce::254"),
	netip.MustParseAddr("192.0.0.192"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
}

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")       // "this host on this network"
	broadcast   = netip.MustParseAddr("255.255.255.255")   // limited broadcast
	ietf4       = netip.MustParsePrefix("192.0.0.0/24")    // RFC 6890 IETF protocol assignments (OCI metadata, NAT64 discovery), never a pod
	ipv4Compat  = netip.MustParsePrefix("::/96")           // deprecated IPv4-compatible IPv6
	ipv4Trans   = netip.MustParsePrefix("::ffff:0:0:0/96") // RFC 2765/6145 IPv4-translated (SIIT)
	nat64WKP    = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052 well-known prefix
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48")  // RFC 8215 local-use prefix
	sixToFour   = netip.MustParsePrefix("2002::/16")       // RFC 3056
	teredo      = netip.MustParsePrefix("2001::/32")       // RFC 4380
	siteLocal   = netip.MustParsePrefix("fec0::/10")       // deprecated site-local, treated as link-scoped
	loopback4   = netip.MustParsePrefix("127.0.0.0/8")     // all of it, not just 127.0.0.1
	linkLocal4  = netip.MustParsePrefix("169.254.0.0/16")  // IPv4 link-local, metadata services
	linkLocal6  = netip.MustParsePrefix("fe80::/10")       // IPv6 link-local unicast
	multicast6  = netip.MustParsePrefix("ff00::/8")        // every IPv6 multicast scope
	multicast4  = netip.MustParsePrefix("224.0.0.0/4")     // every IPv4 multicast group
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")     // class E, never a pod
	loopbackV6  = netip.IPv6Loopback()                     // ::1
	unspecified = netip.IPv6Unspecified()                  // ::
)

// Rules are the dial rules. The zero value is the production rule set.
type Rules struct {
	// Self lists the doorman's own addresses (POD_IPS); never dialled.
	Self []netip.Addr
	// AllowLoopback lets tests dial 127.0.0.0/8 and ::1. No production flag
	// sets it: test backends on loopback stand in for pods.
	AllowLoopback bool
}

// Check returns nil when a may be dialled, otherwise an error wrapping
// ErrForbidden that says why.
func (r Rules) Check(a netip.Addr) error {
	if !a.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrForbidden)
	}
	if a.Zone() != "" {
		return fmt.Errorf("%w: %s has a zone", ErrForbidden, a)
	}
	for _, s := range r.Self {
		if s.Unmap().WithZone("") == a.Unmap() {
			return fmt.Errorf("%w: %s is the doorman itself", ErrForbidden, a)
		}
	}
	// The address as written, then every IPv4 address it carries.
	for _, c := range candidates(a) {
		if why := r.forbidden(c); why != "" {
			if c == a {
				return fmt.Errorf("%w: %s is %s", ErrForbidden, a, why)
			}
			return fmt.Errorf("%w: %s embeds %s, which is %s", ErrForbidden, a, c, why)
		}
		for _, s := range r.Self {
			if c == s.Unmap().WithZone("") {
				return fmt.Errorf("%w: %s embeds the doorman's own address %s", ErrForbidden, a, c)
			}
		}
	}
	return nil
}

// CheckAddrPort is Check for an address and port; port 0 is refused.
func (r Rules) CheckAddrPort(ap netip.AddrPort) error {
	if ap.Port() == 0 {
		return fmt.Errorf("%w: port 0", ErrForbidden)
	}
	return r.Check(ap.Addr())
}

func (r Rules) forbidden(a netip.Addr) string {
	switch {
	case slices.Contains(Metadata, a):
		return "a cloud metadata address"
	case a.Is4() && loopback4.Contains(a), a == loopbackV6:
		if r.AllowLoopback {
			return ""
		}
		return "loopback"
	case a == unspecified, a.Is4() && thisNetwork.Contains(a):
		return "unspecified"
	case a == broadcast:
		return "broadcast"
	case a.Is4() && linkLocal4.Contains(a), linkLocal6.Contains(a), siteLocal.Contains(a):
		return "link-local"
	case a.Is4() && multicast4.Contains(a), multicast6.Contains(a):
		return "multicast"
	case a.Is4() && reserved4.Contains(a):
		return "reserved"
	case a.Is4() && ietf4.Contains(a):
		return "an IETF protocol assignment (192.0.0.0/24)"
	}
	return ""
}

// candidates returns a and every IPv4 address an IPv6 spelling of it embeds.
func candidates(a netip.Addr) []netip.Addr {
	out := []netip.Addr{a}
	if a.Is4() {
		return out
	}
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case a.Is4In6():
		out = append(out, a.Unmap())
	case ipv4Compat.Contains(a) && a != unspecified && a != loopbackV6:
		out = append(out, v4(12))
	case ipv4Trans.Contains(a):
		out = append(out, v4(12))
	case nat64WKP.Contains(a):
		out = append(out, v4(12))
	case nat64Local.Contains(a):
		// RFC 6052 permits several prefix lengths inside the /48; check
		// the /96 spelling and the /48 one (IPv4 in bytes 6..10, skipping byte 8).
		out = append(out, v4(12), netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]}))
	case sixToFour.Contains(a):
		out = append(out, v4(2))
	case teredo.Contains(a):
		// Server address in bytes 4..8; client address obfuscated (inverted) in 12..16.
		out = append(out, v4(4), netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}))
	}
	return out
}
