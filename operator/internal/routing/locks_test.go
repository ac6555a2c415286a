package routing

import (
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// The per-workload locks serialise each workload's calls and are gone
// once nobody holds or waits for them: a map of every workload ever routed
// would grow with each one deleted
// (docs/design/faults.md#nothing-outlives-its-object).
func TestPerWorkloadLocksSerialiseAndLeaveNothingBehind(t *testing.T) {
	r := &Router{locks: map[types.NamespacedName]*keyLock{}}
	keys := []types.NamespacedName{{Namespace: "a", Name: "x"}, {Namespace: "a", Name: "y"}, {Namespace: "b", Name: "x"}}
	inside := map[types.NamespacedName]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 300 {
		k := keys[i%len(keys)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := r.lock(k)
			mu.Lock()
			inside[k]++
			if inside[k] > 1 {
				t.Errorf("two callers inside %s at once", k)
			}
			mu.Unlock()
			mu.Lock()
			inside[k]--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
	if n := len(r.locks); n != 0 {
		t.Fatalf("%d locks left after every caller let go, want 0", n)
	}
}
