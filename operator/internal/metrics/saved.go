package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
)

// PauseKey names one pause: its ManagedWorkload and when it began, in Unix
// seconds (what status.pause.startedAt holds; a time.Time would compare
// its location too, which decoding sets).
type PauseKey struct {
	UID       types.UID
	StartedAt int64
}

// PauseOf returns the key of mw's pause; the zero key when it has none.
func PauseOf(mw *napwakev1alpha1.ManagedWorkload) PauseKey {
	if mw.Status.Pause == nil {
		return PauseKey{}
	}
	return PauseKey{UID: mw.UID, StartedAt: mw.Status.Pause.StartedAt.Unix()}
}

var savedDesc = prometheus.NewDesc("napwake_operator_paused_replica_seconds_total",
	"Replica-seconds not run because workloads were paused: each pause's saved replicas times its length so far, pauses under way included.", nil, nil)

// Saved is napwake_operator_paused_replica_seconds_total, a counter that
// grows while workloads stay paused, not only when a pause ends: at each
// scrape it adds, for every pause under way in the cache, its replicas
// times its length so far. What a pause has shown is never taken back, so
// the counter only grows: the pause's end adds only what it lasted beyond
// the last scrape, and a pause that leaves the cache (its ManagedWorkload
// deleted, or the end not yet recorded) keeps what it showed.
type Saved struct {
	mu     sync.Mutex
	reader client.Reader // nil: only ended pauses count
	clock  clock.PassiveClock
	pauses map[PauseKey]*tally
	base   float64 // pauses over and forgotten
}

type tally struct {
	shown float64 // replica-seconds counted so far
	over  bool    // its end was recorded
}

func newSaved() *Saved { return &Saved{clock: clock.RealClock{}, pauses: map[PauseKey]*tally{}} }

func (s *Saved) watch(reader client.Reader, clk clock.PassiveClock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reader, s.clock = reader, clk
}

func (s *Saved) tally(k PauseKey) *tally {
	t := s.pauses[k]
	if t == nil {
		t = &tally{}
		s.pauses[k] = t
	}
	return t
}

// ended records the end of pause k, which saved v replica-seconds in all.
func (s *Saved) ended(k PauseKey, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k == (PauseKey{}) {
		s.base += v
		return
	}
	t := s.tally(k)
	t.shown = max(t.shown, v)
	t.over = true
}

func (s *Saved) Describe(ch chan<- *prometheus.Desc) { ch <- savedDesc }

func (s *Saved) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reader != nil {
		s.update()
	}
	total := s.base
	for _, t := range s.pauses {
		total += t.shown
	}
	ch <- prometheus.MustNewConstMetric(savedDesc, prometheus.CounterValue, total)
}

// update counts the pauses under way in the cache up to now and forgets
// pauses that are over and gone from it. On a cache error it changes
// nothing: the counter holds still for that scrape.
func (s *Saved) update() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list napwakev1alpha1.ManagedWorkloadList
	if err := s.reader.List(ctx, &list); err != nil {
		return
	}
	now := s.clock.Now()
	current := map[PauseKey]bool{}
	live := map[types.UID]bool{}
	for i := range list.Items {
		mw := &list.Items[i]
		live[mw.UID] = true
		if p := mw.Status.Phase; mw.Status.Pause == nil || (p != napwakev1alpha1.PhasePausing && p != napwakev1alpha1.PhasePaused) {
			continue
		}
		k := PauseOf(mw)
		current[k] = true
		if t := s.tally(k); !t.over {
			t.shown = max(t.shown, float64(decide.WantReplicas(mw.Status.Pause))*now.Sub(mw.Status.Pause.StartedAt.Time).Seconds())
		}
	}
	for k, t := range s.pauses {
		// Forget a pause once its end is recorded and the cache has moved
		// past it, or once its ManagedWorkload is gone: nothing can add
		// to it after that.
		if !current[k] && (t.over || !live[k.UID]) {
			s.base += t.shown
			delete(s.pauses, k)
		}
	}
}
