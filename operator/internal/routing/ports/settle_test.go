package ports

import (
	"slices"
	"testing"
	"time"
)

// The two-phase use the Router makes: Claim before the status write,
// Giving for the holds that write records, Settle once it succeeded.
func TestClaimReleasesNothingUntilSettle(t *testing.T) {
	api := Key{"preview-42", "api"}
	limits := Limits{Min: 20000, Max: 20009, PerWorkload: 4, PerNamespace: 8}
	until := t0.Add(time.Minute)

	t.Run("a claim keeps the ports given up owned until the write that gives them up is settled", func(t *testing.T) {
		a := mustNew(t, limits)
		had, _ := a.Claim(api, nil, 2, t0)
		got, err := a.Claim(api, had[:1], 1, t0)
		if err != nil {
			t.Fatal(err)
		}
		if o := a.Owned(api); !slices.Equal(o, []int32{20000, 20001, 20002}) {
			t.Fatalf("owned %v before the write, want the two it had and the new one", o)
		}
		keep := append([]int32{had[0]}, got...)
		if g := a.Giving(api, keep, until); len(g) != 1 || g[0] != (Hold{Port: 20001, Until: until}) {
			t.Fatalf("Giving = %v, want 20001 held a minute", g)
		}
		if o := a.Owned(api); len(o) != 3 {
			t.Fatalf("Giving changed what is owned: %v", o)
		}
		if s := a.Settle(api, keep, until); len(s) != 1 || s[0].Port != 20001 {
			t.Fatalf("Settle = %v, want 20001", s)
		}
		if o := a.Owned(api); !slices.Equal(o, []int32{20000, 20002}) {
			t.Fatalf("owned %v after Settle, want 20000 and 20002", o)
		}
		if !a.HeldUntil(20001, t0).Equal(until) {
			t.Fatal("the port given up is not held")
		}
	})

	t.Run("a claim over the cap counts the ports kept, not those still owned, and changes nothing", func(t *testing.T) {
		a := mustNew(t, limits)
		if _, err := a.Claim(api, nil, 4, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Claim(api, nil, 4, t0); err != nil {
			t.Fatalf("replacing all 4 ports: %v", err)
		}
		if _, err := a.Claim(api, nil, 5, t0); err == nil {
			t.Fatal("5 ports over a cap of 4 allowed")
		}
		if o := a.Owned(api); len(o) != 8 {
			t.Fatalf("owned %d, want the 8 claimed until a write settles them", len(o))
		}
	})

	t.Run("a port forgone goes back, held, and is not handed out before its hold ends", func(t *testing.T) {
		a := mustNew(t, Limits{Min: 20000, Max: 20001, PerWorkload: 2, PerNamespace: 2})
		got, _ := a.Claim(api, nil, 1, t0)
		a.Forgo(api, got, until)
		if len(a.Owned(api)) != 0 || !a.HeldUntil(got[0], t0).Equal(until) {
			t.Fatalf("owned %v, held until %v", a.Owned(api), a.HeldUntil(got[0], t0))
		}
		next, err := a.Claim(api, nil, 1, t0)
		if err != nil || next[0] == got[0] {
			t.Fatalf("Claim = %v, %v: the forgone port came back within its hold", next, err)
		}
	})
}
