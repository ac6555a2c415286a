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
