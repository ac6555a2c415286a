package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestRunExitCodes runs main's run: 0 on success, 2 for a mistake in the
// command line (found before the cluster is contacted), 1 when the cluster
// cannot be reached.
func TestRunExitCodes(t *testing.T) {
	args := os.Args
	t.Cleanup(func() { os.Args = args })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://"+addr+"', insecure-skip-tls-verify: true}\n"+
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"kubectl-napwake", "--help"}, 0},
		{[]string{"kubectl-napwake", "wake"}, 2},
		{[]string{"kubectl-napwake", "status", "--no-such-flag"}, 2},
		{[]string{"kubectl-napwake", "no-such-command"}, 2},
		{[]string{"kubectl-napwake", "wake", "api", "--timeout", "0s"}, 2},
		{[]string{"kubectl-napwake", "status", "-o", "xml"}, 2},
		{[]string{"kubectl-napwake", "status"}, 1},
		{[]string{"kubectl-napwake", "wake", "api", "web"}, 1},
	} {
		os.Args = tc.args
		if got := run(); got != tc.code {
			t.Errorf("%v: exit code %d, want %d", tc.args[1:], got, tc.code)
		}
	}
}
