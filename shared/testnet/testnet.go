// Package testnet gives tests loopback addresses to listen on. It imports the
// standard library only, so any module's tests may use it cheaply (testenv,
// beside it, brings envtest). Nothing here is for production code.
package testnet

import (
	"net"
	"testing"
)

// FreeAddr returns a 127.0.0.1:port address that was free a moment ago.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// FreePort is FreeAddr's port.
func FreePort(tb testing.TB) int {
	tb.Helper()
	a, err := net.ResolveTCPAddr("tcp", FreeAddr(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return a.Port
}
