package addr

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// inNetns is set in the copy of the test binary that TestMain runs inside a
// network namespace of its own (only lo, up): there a connect either reaches
// this host or fails at once with "network unreachable", so the kernel can
// say, independently of the table, what an address really reaches. Nothing
// leaves the machine: the namespace has no other interface and no route.
const inNetns = "NAPWAKE_ADDR_NETNS"

func TestMain(m *testing.M) {
	if os.Getenv(inNetns) == "" && os.Geteuid() == 0 {
		if unshare, err := exec.LookPath("unshare"); err == nil {
			if ip, err := exec.LookPath("ip"); err == nil {
				// sh: bring lo up, then become the test binary again.
				args := append([]string{unshare, "--net", "--", "/bin/sh", "-c", ip + ` link set lo up && exec "$0" "$@"`}, os.Args...)
				err := syscall.Exec(unshare, args, append(os.Environ(), inNetns+"=1"))
				fmt.Fprintln(os.Stderr, "addr tests: could not re-run in a network namespace, so the kernel check is skipped:", err)
			}
		}
	}
	os.Exit(m.Run())
}

// localListener listens on every local address, both families, and returns
// its port; a connect that reaches it reached this host.
func localListener(tb testing.TB) uint16 {
	tb.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// reachesThisHost asks the kernel: does a connect to a land on this host?
func reachesThisHost(tb testing.TB, a netip.Addr, port uint16) bool {
	tb.Helper()
	c, err := net.DialTimeout("tcp", netip.AddrPortFrom(a, port).String(), 2*time.Second)
	if err == nil {
		_ = c.Close()
		return true
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && (errno == syscall.ENETUNREACH || errno == syscall.EHOSTUNREACH || errno == syscall.EINVAL || errno == syscall.EADDRNOTAVAIL || errno == syscall.EAFNOSUPPORT) {
		return false
	}
	if errors.As(err, &errno) && errno == syscall.ECONNREFUSED {
		return true // something local answered, just not our listener's port
	}
	tb.Fatalf("connect to %s: %v (want success or network unreachable inside the namespace)", a, err)
	return false
}

func needNetns(tb testing.TB) {
	tb.Helper()
	if os.Getenv(inNetns) == "" {
		tb.Skip("needs root, unshare and ip to ask the kernel inside a network namespace of its own")
	}
}

// TestTheKernelAgreesWithTheTable: every loopback and unspecified spelling
// the table refuses really reaches this host, and no address the table
// allows does, so the kernel check can tell a hole from a mistake.
func TestTheKernelAgreesWithTheTable(t *testing.T) {
	needNetns(t)
	port := localListener(t)
	for _, s := range []string{"127.0.0.1", "127.9.9.9", "::1", "0.0.0.0", "::", "::ffff:127.0.0.1", "::ffff:0.0.0.0"} {
		a := netip.MustParseAddr(s)
		if !reachesThisHost(t, a, port) {
			t.Errorf("connect to %s did not reach this host: the check cannot see holes", a)
		}
		if (Rules{}).Check(a) == nil {
			t.Errorf("Check(%s) allowed an address that reaches this host", a)
		}
	}
	for _, s := range []string{"10.244.1.5", "fd00:10:244::5", "::ffff:0:127.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1"} {
		if a := netip.MustParseAddr(s); reachesThisHost(t, a, port) {
			t.Errorf("connect to %s reached this host", a)
		}
	}
}

// kernelOracle is FuzzCheck's independent check: outside the namespace it
// does nothing.
func kernelOracle(tb testing.TB) func(testing.TB, netip.Addr) {
	tb.Helper()
	if os.Getenv(inNetns) == "" {
		return func(testing.TB, netip.Addr) {}
	}
	port := localListener(tb)
	return func(t testing.TB, a netip.Addr) {
		t.Helper()
		if reachesThisHost(t, a, port) {
			t.Fatalf("Check(%s) allowed it, but connect reaches this host (port %s)", a, strconv.Itoa(int(port)))
		}
	}
}
