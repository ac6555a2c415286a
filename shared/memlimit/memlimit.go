// Package memlimit sets the Go runtime's soft memory limit from the
// container's cgroup memory limit, so the garbage collector works harder
// as a pod nears its limit instead of the kernel killing it: Go does not
// read the cgroup limit itself. It must not do anything when GOMEMLIMIT is
// set, or when there is no limit.
package memlimit

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Share is the part of the cgroup limit the runtime aims to stay under:
// the rest is for what the Go heap does not count (stacks in use, the
// kernel's socket buffers are charged to the cgroup too).
const Share = 0.9

// cgroupFiles are where the limit is, cgroup v2 first, then v1.
var cgroupFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// Set sets the soft memory limit to Share of the cgroup limit, unless
// GOMEMLIMIT is set. It returns the limit set, 0 when it set none.
func Set() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	for _, f := range cgroupFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if limit, ok := Parse(string(b)); ok {
			soft := int64(float64(limit) * Share)
			debug.SetMemoryLimit(soft)
			return soft
		}
		return 0
	}
	return 0
}

// noLimitAbove: cgroup v1 writes "no limit" as a number near 2^63 rounded
// down to the page size.
const noLimitAbove = 1 << 62

// Parse reads a cgroup memory limit file's content: a number of bytes,
// or "max" (v2) or a huge number (v1) for no limit.
func Parse(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= noLimitAbove {
		return 0, false
	}
	return n, true
}
