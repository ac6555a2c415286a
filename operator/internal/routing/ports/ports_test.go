package ports

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 10, 23, 18, 4, 12, 0, time.UTC)

func mustNew(t testing.TB, l Limits) *Allocator {
	t.Helper()
	a, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAllocator(t *testing.T) {
	api := Key{"preview-42", "api"}
	web := Key{"preview-42", "web"}
	other := Key{"team-b", "db"}
	full := Limits{Min: 20000, Max: 29999, PerWorkload: 32, PerNamespace: 256}

	t.Run("fresh ports come from the range, one per route, in order", func(t *testing.T) {
		a := mustNew(t, full)
		got, rel, err := a.Assign(api, nil, 3, t0, time.Minute)
		if err != nil || len(rel) != 0 {
			t.Fatalf("Assign: %v %v", err, rel)
		}
		want := []int32{20000, 20001, 20002}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	})

	t.Run("kept ports stay, dropped ones are held for the hold and not handed to anyone", func(t *testing.T) {
		a := mustNew(t, Limits{Min: 20000, Max: 20002, PerWorkload: 3, PerNamespace: 3})
		got, _, _ := a.Assign(api, nil, 2, t0, time.Minute)
		_, rel, err := a.Assign(api, got[:1], 0, t0, time.Minute)
		if err != nil || len(rel) != 1 || rel[0].Port != got[1] || !rel[0].Until.Equal(t0.Add(time.Minute)) {
			t.Fatalf("release: %v %v", rel, err)
		}
		// 20002 is free, 20001 held: web gets 20002 and then nothing.
		p, _, err := a.Assign(web, nil, 1, t0.Add(30*time.Second), time.Minute)
		if err != nil || p[0] != 20002 {
			t.Fatalf("got %v %v, want 20002", p, err)
		}
		if _, _, err := a.Assign(web, p, 1, t0.Add(59*time.Second), time.Minute); !errors.Is(err, ErrNoFreePort) {
			t.Fatalf("within the hold: err %v, want ErrNoFreePort", err)
		}
		p2, _, err := a.Assign(web, p, 1, t0.Add(time.Minute), time.Minute)
		if err != nil || p2[0] != got[1] {
			t.Fatalf("after the hold: %v %v, want %d", p2, err, got[1])
		}
	})

	t.Run("a workload over its cap gets TooManyPorts and keeps what it had", func(t *testing.T) {
		a := mustNew(t, Limits{Min: 20000, Max: 29999, PerWorkload: 32, PerNamespace: 256})
		got, _, _ := a.Assign(api, nil, 2, t0, time.Minute)
		_, _, err := a.Assign(api, got, 31, t0, time.Minute)
		if !errors.Is(err, ErrTooManyPorts) {
			t.Fatalf("err %v, want ErrTooManyPorts", err)
		}
		if o := a.Owned(api); len(o) != 2 {
			t.Fatalf("owned %v after a refused Assign, want the 2 it had", o)
		}
	})

	t.Run("a namespace over its cap gets TooManyPorts, other namespaces don't count", func(t *testing.T) {
		a := mustNew(t, Limits{Min: 20000, Max: 29999, PerWorkload: 4, PerNamespace: 6})
		if _, _, err := a.Assign(api, nil, 4, t0, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Assign(other, nil, 4, t0, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Assign(web, nil, 3, t0, time.Minute); !errors.Is(err, ErrTooManyPorts) {
			t.Fatalf("err %v, want ErrTooManyPorts", err)
		}
		if _, _, err := a.Assign(web, nil, 2, t0, time.Minute); err != nil {
			t.Fatalf("2 more fit the namespace: %v", err)
		}
	})

	t.Run("holds and ports observed from statuses are honoured, conflicts reported", func(t *testing.T) {
		a := mustNew(t, Limits{Min: 20000, Max: 20003, PerWorkload: 4, PerNamespace: 4})
		if c := a.Observe(api, []int32{20000}, []Hold{{Port: 20001, Until: t0.Add(time.Minute)}}); len(c) != 0 {
			t.Fatalf("conflicts %v", c)
		}
		if c := a.Observe(other, []int32{20000, 30000}, nil); len(c) != 2 {
			t.Fatalf("conflicts %v, want 20000 (api's) and 30000 (out of range)", c)
		}
		got, _, err := a.Assign(other, nil, 2, t0, time.Minute)
		if err != nil || got[0] != 20002 || got[1] != 20003 {
			t.Fatalf("got %v %v, want 20002 20003", got, err)
		}
	})

	t.Run("release holds every port of the workload", func(t *testing.T) {
		a := mustNew(t, full)
		if _, _, err := a.Assign(api, nil, 2, t0, time.Minute); err != nil {
			t.Fatal(err)
		}
		h := a.Release(api, t0, time.Minute)
		if len(h) != 2 || len(a.Owned(api)) != 0 || a.HeldUntil(h[0].Port, t0).IsZero() {
			t.Fatalf("holds %v owned %v", h, a.Owned(api))
		}
		a.Expire(t0.Add(time.Minute))
		if !a.HeldUntil(h[0].Port, t0).IsZero() {
			t.Fatal("hold still there after Expire")
		}
	})

	t.Run("bad limits are refused", func(t *testing.T) {
		for _, l := range []Limits{{Min: 0, Max: 10, PerWorkload: 1, PerNamespace: 1}, {Min: 20000, Max: 29999, PerWorkload: 0, PerNamespace: 1}, {Min: 20000, Max: 29999, PerWorkload: 4, PerNamespace: 2}} {
			if _, err := New(l); err == nil {
				t.Errorf("New(%+v) accepted", l)
			}
		}
	})
}

// FuzzAllocator drives the allocator with random assign/release/clock-advance
// sequences over a small range. It must never hand a port to two workloads,
// never hand out a port within its hold, never leave the range and never go
// over a cap.
func FuzzAllocator(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0x10, 0x21, 0x32, 0x43, 0xff, 0x01, 0x10, 0x10, 0x10})
	f.Add([]byte{3, 3, 3, 3, 0x80, 0x80, 3, 3, 3, 0x41, 0x41})
	f.Fuzz(func(t *testing.T, ops []byte) {
		l := Limits{Min: 20000, Max: 20011, PerWorkload: 4, PerNamespace: 6}
		a := mustNew(t, l)
		keys := []Key{{"a", "x"}, {"a", "y"}, {"b", "x"}, {"b", "z"}}
		now := t0
		const hold = time.Minute
		owned := map[Key]map[int32]bool{}
		heldUntil := map[int32]time.Time{} // the model's own view of holds
		if len(ops) > 512 {
			ops = ops[:512]
		}
		for _, op := range ops {
			k := keys[int(op)&3]
			switch op >> 6 {
			case 0, 1: // assign: keep some, ask for some fresh
				var keep []int32
				i := 0
				for p := range owned[k] {
					if (int(op)>>2)&(1<<i) != 0 {
						keep = append(keep, p)
					}
					i++
				}
				got, rel, err := a.Assign(k, keep, int(op>>2)&7, now, hold)
				if err != nil {
					if !errors.Is(err, ErrTooManyPorts) && !errors.Is(err, ErrNoFreePort) {
						t.Fatalf("unexpected error %v", err)
					}
					continue
				}
				for _, h := range rel {
					if !owned[k][h.Port] {
						t.Fatalf("released %d, which %v did not own", h.Port, k)
					}
					delete(owned[k], h.Port)
					heldUntil[h.Port] = now.Add(hold)
				}
				for _, p := range got {
					if p < l.Min || p > l.Max {
						t.Fatalf("port %d outside the range", p)
					}
					for o, ps := range owned {
						if ps[p] {
							t.Fatalf("port %d handed to %v while %v owns it", p, k, o)
						}
					}
					if u := heldUntil[p]; u.After(now) {
						t.Fatalf("port %d handed out at %v, held until %v", p, now, u)
					}
					if owned[k] == nil {
						owned[k] = map[int32]bool{}
					}
					owned[k][p] = true
				}
			case 2: // release
				for _, h := range a.Release(k, now, hold) {
					if !owned[k][h.Port] {
						t.Fatalf("released %d, which %v did not own", h.Port, k)
					}
					heldUntil[h.Port] = now.Add(hold)
				}
				owned[k] = nil
			case 3: // the clock moves on, 0-63 s
				now = now.Add(time.Duration(op&63) * time.Second)
				if op&1 == 0 {
					a.Expire(now)
				}
			}
			ns := map[string]int{}
			for o, ps := range owned {
				if len(ps) > l.PerWorkload {
					t.Fatalf("%v holds %d ports, cap %d", o, len(ps), l.PerWorkload)
				}
				ns[o.Namespace] += len(ps)
				if got := a.Owned(o); len(got) != len(ps) {
					t.Fatalf("allocator says %v owns %v, model says %v", o, got, ps)
				}
			}
			for n, c := range ns {
				if c > l.PerNamespace {
					t.Fatalf("namespace %s holds %d ports, cap %d", n, c, l.PerNamespace)
				}
			}
		}
	})
}
