package kube

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/shared/onewake"
)

// Hooks does in Kubernetes what the proxy asks: it implements proxy.Hooks.
type Hooks struct {
	client   client.Client
	cached   client.Reader // nil: every read goes to the API server
	recorder record.EventRecorder
	clock    clock.PassiveClock
	log      logr.Logger

	mu         sync.Mutex
	lastWarn   map[string]time.Time // RequestNotServed per workload
	turnedAway map[turnedKey]int64  // not yet written
}

type turnedKey struct {
	workload types.NamespacedName
	pausedAt time.Time
}

var _ proxy.Hooks = (*Hooks)(nil)

// NewHooks returns hooks writing through c and recorder, stamping times
// read from clk: the API server's clock (ServerClock) in the doorman, so
// a node clock off by seconds stamps no wake before its pause.
func NewHooks(c client.Client, recorder record.EventRecorder, clk clock.PassiveClock, log logr.Logger) *Hooks {
	return &Hooks{client: c, recorder: recorder, clock: clk, log: log,
		lastWarn: map[string]time.Time{}, turnedAway: map[turnedKey]int64{}}
}

// ReadFirstFrom makes a wake's stamp read r (the doorman's informer cache
// of ManagedWorkloads) before the API server: see stampRequest. It returns
// h.
func (h *Hooks) ReadFirstFrom(r client.Reader) *Hooks {
	h.cached = r
	return h
}

// Wake stamps last-request and last-request-from on the workload and emits
// WokenByRequest naming the Service, once per pause whichever doorman pod
// and however many callers: it stamps nothing when the API server's copy
// of the ManagedWorkload is no longer Paused or Pausing, or has its
// last-request in this pause and within onewake.WakeStands (another pod
// stamped it); otherwise it patches guarded by the resourceVersion it
// read (maybe from the cache: stampRequest), reading again on a conflict,
// so of two pods waking at once one stamps and the other sees its stamp.
func (h *Hooks) Wake(ctx context.Context, w proxy.Workload, service string, from netip.Addr) error {
	_, err := h.stampRequest(ctx, w, from, stamped, "Woken by a request to Service %s", service)
	return err
}

// stamped says whether mw needs no wake stamp at now: it is not Paused or
// Pausing (already waking, or running), or its last-request is in its
// current pause (to the second, as the operator compares) and within
// onewake.WakeStands.
func stamped(mw *napwakev1alpha1.ManagedWorkload, now time.Time) bool {
	st := mw.Status
	if st.Phase != napwakev1alpha1.PhasePaused && st.Phase != napwakev1alpha1.PhasePausing {
		return true
	}
	return st.Pause != nil && onewake.Of(st.Pause.StartedAt.Time).Stands(lastRequest(mw), now)
}

// Active stamps napwake.dev/last-activity on w with the time now: the
// connections passing through to it are activity. A plain merge patch:
// the latest time is all that matters.
func (h *Hooks) Active(ctx context.Context, w proxy.Workload) error {
	mw := &napwakev1alpha1.ManagedWorkload{}
	mw.Namespace, mw.Name = w.Namespace, w.Name
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, napwakev1alpha1.AnnotationLastActivity, h.clock.Now().UTC().Format(time.RFC3339Nano))
	if err := h.client.Patch(ctx, mw, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("stamping activity on ManagedWorkload %s: %w", w.Key(), err)
	}
	return nil
}

// RouteConflict warns, on every ManagedWorkload claiming c's port, that the
// doorman serves none of them there.
func (h *Hooks) RouteConflict(_ context.Context, c Conflict) {
	names := make([]string, len(c.Workloads))
	for i, w := range c.Workloads {
		names[i] = w.Key()
	}
	h.log.Info("Serving neither side of a route conflict", "doormanPort", c.DoormanPort, "claimedBy", names)
	for _, w := range c.Workloads {
		mw := &napwakev1alpha1.ManagedWorkload{}
		mw.Namespace, mw.Name = w.Namespace, w.Name
		h.recorder.Eventf(mw, corev1.EventTypeWarning, napwakev1alpha1.EventRouteConflict,
			"Doorman port %d is claimed by %s: the doorman serves none of them there until the operator gives each its own port",
			c.DoormanPort, strings.Join(names, ", "))
	}
}

// notServedEvery is how often each doorman pod may warn per workload.
const notServedEvery = time.Minute

// pruneWarnsAt is the size at which lastWarn drops its stale entries.
const pruneWarnsAt = 256

// NotServed emits a RequestNotServed warning naming the Service, the wait
// and why, at most once a minute per workload from this pod.
func (h *Hooks) NotServed(w proxy.Workload, service string, waited time.Duration, why string) {
	h.mu.Lock()
	now := h.clock.Now()
	if last, ok := h.lastWarn[w.Key()]; ok && now.Sub(last) < notServedEvery {
		h.mu.Unlock()
		return
	}
	if len(h.lastWarn) >= pruneWarnsAt {
		// Entries older than a minute hold nothing back any more: drop
		// them, so workloads long gone do not stay in the map.
		maps.DeleteFunc(h.lastWarn, func(_ string, at time.Time) bool { return now.Sub(at) >= notServedEvery })
	}
	h.lastWarn[w.Key()] = now
	h.mu.Unlock()
	mw := &napwakev1alpha1.ManagedWorkload{}
	mw.Namespace, mw.Name = w.Namespace, w.Name
	h.recorder.Eventf(mw, corev1.EventTypeWarning, napwakev1alpha1.EventRequestNotServed,
		"A request to Service %s was held %s and not served: %s", service, waited.Round(time.Second), why)
}

// TurnedAway counts one request turned away in the workload's current pause.
func (h *Hooks) TurnedAway(w proxy.Workload) {
	if w.PausedAt.IsZero() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.turnedAway[turnedKey{types.NamespacedName{Namespace: w.Namespace, Name: w.Name}, w.PausedAt.UTC().Truncate(time.Second)}]++
}

// FlushTurnedAway adds this pod's counts to each workload's turned-away
// annotation with a resourceVersion-guarded patch. Counts for an older
// pause than the workload's current one are dropped; a conflict keeps the
// count for the next flush.
func (h *Hooks) FlushTurnedAway(ctx context.Context) {
	h.mu.Lock()
	pending := h.turnedAway
	h.turnedAway = map[turnedKey]int64{}
	h.mu.Unlock()
	for k, n := range pending {
		if err := h.addTurnedAway(ctx, k, n); err != nil {
			h.log.V(1).Info("Turned-away count not written yet", "workload", k.workload, "error", err.Error())
			h.mu.Lock()
			h.turnedAway[k] += n
			h.mu.Unlock()
		}
	}
}

func (h *Hooks) addTurnedAway(ctx context.Context, k turnedKey, n int64) error {
	var mw napwakev1alpha1.ManagedWorkload
	if err := h.client.Get(ctx, k.workload, &mw); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("getting ManagedWorkload %s: %w", k.workload, err)
	}
	if mw.Status.Pause == nil || !mw.Status.Pause.StartedAt.UTC().Truncate(time.Second).Equal(k.pausedAt) {
		return nil // the count is for a pause that is over
	}
	total := n
	if at, count, ok := napwakev1alpha1.ParseTurnedAway(mw.Annotations[napwakev1alpha1.AnnotationTurnedAway]); ok && at.Equal(k.pausedAt) {
		total += count
	}
	orig := mw.DeepCopy()
	if mw.Annotations == nil {
		mw.Annotations = map[string]string{}
	}
	mw.Annotations[napwakev1alpha1.AnnotationTurnedAway] = napwakev1alpha1.FormatTurnedAway(k.pausedAt, total)
	if err := h.client.Patch(ctx, &mw, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching the turned-away count of %s: %w", k.workload, err)
	}
	return nil
}

// FinalFlush bounds the flush at shutdown: it must fit, with the HTTP
// servers' shutdown, in what the grace period leaves after the connections.
const FinalFlush = 3 * time.Second

// RunTurnedAway flushes every interval (about a minute) until ctx ends,
// and once more at the end.
func (h *Hooks) RunTurnedAway(ctx context.Context, c clock.Clock, every time.Duration) {
	t := c.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), FinalFlush)
			h.FlushTurnedAway(fctx)
			cancel()
			return
		case <-t.C():
			h.FlushTurnedAway(ctx)
			t.Reset(every)
		}
	}
}
