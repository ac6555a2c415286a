package fdtable

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func openDescriptors(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Reserve grows the table past its present size in one step, and leaves no
// descriptor open behind it.
func TestReserveGrowsTheTableAndLeavesNothingOpen(t *testing.T) {
	before, err := Size()
	if err != nil {
		t.Fatal(err)
	}
	want := 2*before + 1
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur < uint64(want) {
		t.Skipf("RLIMIT_NOFILE %d is below the %d descriptors this test asks for", rl.Cur, want)
	}
	open := openDescriptors(t)
	got, err := Reserve(want)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Reserve(%d) = %d, want %d", want, got, want)
	}
	after, err := Size()
	if err != nil {
		t.Fatal(err)
	}
	if after < want {
		t.Errorf("descriptor table holds %d after Reserve(%d) (was %d)", after, want, before)
	}
	if n := openDescriptors(t); n != open {
		t.Errorf("%d descriptors open after Reserve, %d before", n, open)
	}
}

// Under a lower RLIMIT_NOFILE, Reserve grows the table as far as the limit
// allows and says so.
func TestReserveStopsAtTheDescriptorLimit(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
			t.Fatal(err)
		}
	}()
	limit := uint64(openDescriptors(t) + 64)
	if limit > rl.Cur {
		t.Skipf("RLIMIT_NOFILE %d is too low already", rl.Cur)
	}
	low := unix.Rlimit{Cur: limit, Max: rl.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	got, err := Reserve(int(limit) * 4)
	if err != nil {
		t.Fatal(err)
	}
	if got != int(limit) {
		t.Errorf("Reserve under RLIMIT_NOFILE %d = %d, want %d", limit, got, limit)
	}
}
