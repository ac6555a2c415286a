package main

import (
	"os"
	"testing"
)

func TestRunExitsNonZeroOnAMistakeAndZeroOnHelp(t *testing.T) {
	args := os.Args
	t.Cleanup(func() { os.Args = args })
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"kubectl-napwake", "wake"}, 1},
		{[]string{"kubectl-napwake", "status", "--no-such-flag"}, 1},
		{[]string{"kubectl-napwake", "--help"}, 0},
	} {
		os.Args = tc.args
		if got := run(); got != tc.code {
			t.Errorf("%v: exit code %d, want %d", tc.args[1:], got, tc.code)
		}
	}
}
