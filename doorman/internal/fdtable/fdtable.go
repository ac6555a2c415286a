// Package fdtable grows this process's descriptor table ahead of need.
//
// Linux grows a process's descriptor table by doubling it when a new
// descriptor does not fit. In a process with more than one thread (every Go
// program) each growth waits for an RCU grace period, and while it waits
// every other thread that opens a descriptor (a socket, an accept) waits
// too (fs/file.c: expand_fdtable, resize_in_progress). On the 2-vCPU VM the
// benchmarks run on, that was 10–25 ms each time the table outgrew 256,
// then 512 descriptors: a freshly started doorman passing 256 held callers
// on stalled its last few dials for that long, the one wake-to-first-byte
// target it missed. Tables never shrink, so growing once, at start, while
// nothing waits on the doorman, moves that cost out of every wake.
package fdtable

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Reserve grows the descriptor table to hold at least n descriptors, or as
// many as RLIMIT_NOFILE allows if that is fewer. It returns the number of
// descriptors the process may now hold without the table growing, and
// closes what it opened.
func Reserve(n int) (int, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	if rl.Cur < uint64(n) {
		n = int(rl.Cur)
	}
	if n < 1 {
		return 0, nil
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	// F_DUPFD takes the lowest free descriptor at or above n-1: the table
	// grows to hold it in one step, and no descriptor in use is touched.
	hi, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, n-1)
	if err != nil {
		return 0, err
	}
	_ = unix.Close(hi)
	return n, nil
}

// Size returns how many descriptors the process's table holds now (FDSize
// in /proc/self/status).
func Size() (int, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("FDSize:")); ok {
			return strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	return 0, errors.New("no FDSize in /proc/self/status")
}
