package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestVersionPrintsTheComponentAndExitsCleanly(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "napwake-operator ") {
		t.Errorf("--version printed %q", out.String())
	}
}

func TestBadFlagsAreRefusedBeforeAnythingStarts(t *testing.T) {
	for _, args := range [][]string{
		{"--default-wake", "Ask"},
		{"--default-idle-after", "10s"},
		{"--log-level", "loud"},
		{"--no-such-flag"},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, &out, &errOut); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

// The pre-delete hook's flags are checked before the API server is asked
// anything: each error names what is wrong.
func TestRestoreRefusesBadFlagsNamingThem(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"restore", "--stop-operator", "napwake-operator"}, "--stop-operator must be namespace/name"},
		{[]string{"restore", "--timeout", "0s"}, "--timeout must be more than 0s"},
		{[]string{"restore", "everything"}, "restore takes no arguments"},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), c.args, &out, &errOut); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v, want an error saying %q", c.args, err, c.want)
		}
	}
}
