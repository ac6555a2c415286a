package kube

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/ask"
	"napwake.dev/doorman/internal/proxy"
)

// clickAttempts bounds the reads and writes of one click: each conflict
// means another writer changed the ManagedWorkload meanwhile, and after a
// few the click is answered as too soon rather than held up.
const clickAttempts = 3

// Click stamps a click on Wake it as w's wake request, at most once a
// minute whichever doorman pod the click reaches
// (docs/design/ask.md#one-wake-a-minute):
// it reads the ManagedWorkload from the API server, not the informer cache,
// answers false when its napwake.dev/last-request is within
// onewake.ClickInterval, and otherwise patches last-request and
// last-request-from guarded by the resourceVersion it read. On a conflict
// (another pod's click, or any other write) it reads again, so of two pods
// clicking at once one wakes and the other sees its stamp.
func (h *Hooks) Click(ctx context.Context, w proxy.Workload, service string, from netip.Addr) (bool, error) {
	woke, err := h.stampRequest(ctx, w, from, func(mw *napwakev1alpha1.ManagedWorkload, now time.Time) bool {
		return ask.RecentWake(lastRequest(mw), now)
	}, "Woken by a person who pressed Wake it, through Service %s", service)
	if errors.Is(err, errKeptChanging) {
		return false, nil // answered as too soon rather than held up
	}
	return woke, err
}

// errKeptChanging: the ManagedWorkload changed under every attempt.
var errKeptChanging = errors.New("it kept changing")

// stampRequest stamps last-request and last-request-from on w's
// ManagedWorkload unless skip says it needs none. The patch is guarded by
// the resourceVersion of the copy it was decided from, and a conflict
// reads again, at most clickAttempts times from the API server. With a
// cache (ReadFirstFrom), the first try reads the cache: when it is current
// the stamp costs one write and no read on the held caller's path; when it
// is behind, the guarded patch is refused with a conflict and the API
// server is read. Only the API server's copy may say no stamp is needed: a
// cache behind could say so wrongly and leave the caller held for nothing.
// It emits WokenByRequest with the message given once it stamped, and
// reports whether it did.
func (h *Hooks) stampRequest(ctx context.Context, w proxy.Workload, from netip.Addr,
	skip func(*napwakev1alpha1.ManagedWorkload, time.Time) bool, event string, args ...any) (bool, error) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	readers := make([]client.Reader, 0, clickAttempts+1)
	if h.cached != nil {
		readers = append(readers, h.cached)
	}
	for range clickAttempts {
		readers = append(readers, h.client)
	}
	for i, r := range readers {
		fromCache := h.cached != nil && i == 0
		var mw napwakev1alpha1.ManagedWorkload
		if err := r.Get(ctx, key, &mw); err != nil {
			if fromCache {
				continue
			}
			return false, fmt.Errorf("getting ManagedWorkload %s: %w", key, err)
		}
		now := h.clock.Now()
		if skip(&mw, now) {
			if fromCache {
				continue
			}
			return false, nil
		}
		orig := mw.DeepCopy()
		if mw.Annotations == nil {
			mw.Annotations = map[string]string{}
		}
		// Sub-second precision (docs/design/time.md#comparing-times): the operator compares
		// it with the pause's start at the precision both carry.
		mw.Annotations[napwakev1alpha1.AnnotationLastRequest] = now.UTC().Format(time.RFC3339Nano)
		mw.Annotations[napwakev1alpha1.AnnotationLastRequestFrom] = from.String()
		err := h.client.Patch(ctx, &mw, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		switch {
		case apierrors.IsConflict(err):
			continue
		case err != nil:
			return false, fmt.Errorf("stamping a wake request on ManagedWorkload %s: %w", key, err)
		}
		h.recorder.Eventf(&mw, corev1.EventTypeNormal, napwakev1alpha1.EventWokenByRequest, event, args...)
		return true, nil
	}
	return false, fmt.Errorf("stamping a wake request on ManagedWorkload %s: %w under %d attempts", key, errKeptChanging, clickAttempts)
}

// lastRequest is mw's napwake.dev/last-request; zero when unset or not
// RFC 3339.
func lastRequest(mw *napwakev1alpha1.ManagedWorkload) time.Time {
	t, err := time.Parse(time.RFC3339, mw.Annotations[napwakev1alpha1.AnnotationLastRequest])
	if err != nil {
		return time.Time{}
	}
	return t
}
