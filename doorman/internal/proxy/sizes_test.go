package proxy

import (
	"maps"
	"testing"
)

func TestTableSizesGoBackOnceAHeldCallerIsPassedAndGone(t *testing.T) {
	h := newHarness(t, testConfig(), testWorkload())
	b := newBackend(t)
	b.set(nil, true)
	idle := map[string]int{TableListeners: 1, TableConnections: 0, TableServiceKeys: 0, TableLastWakes: 0,
		TableWakeSources: 0, TableHeldKeys: 0, TablePassingKeys: 0, TablePassingActivity: 0, TableWakeRetriers: 0}
	if got := h.srv.TableSizes(); !maps.Equal(got, idle) {
		t.Fatalf("sizes before any caller %v, want %v", got, idle)
	}
	c := h.dial()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: api\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	wait(t, "the wake", func() bool { n, _, _ := h.rec.counts(); return n == 1 })
	h.ready(b)
	wait(t, "the pass-through", func() bool { return b.accepted() == 1 })
	_ = c.Close()
	// The wake memo and the caller's limiter are kept on purpose (bounded
	// elsewhere); the per-connection tables empty.
	after := maps.Clone(idle)
	after[TableServiceKeys], after[TableLastWakes], after[TableWakeSources] = 1, 1, 1
	wait(t, "the tables back to one route's", func() bool { return maps.Equal(h.srv.TableSizes(), after) })
}
