// Package rewatch makes informers come back within about a second of the
// API server's return after an outage.
//
// A client-go reflector whose list or watch fails waits before it tries
// again, doubling the wait from 0.8 s up to 30 s and adding up to as much
// again of jitter: after a 30-second outage its next try can be a minute
// away, and until then the cache sees nothing, yet every workload must
// wake within 10 s of the API server's return
// (docs/design/faults.md#the-api-server-away). The informer cannot be
// given another back-off, but its ListerWatcher can be wrapped: Wrap retries
// a list or watch that failed for want of the API server itself, every
// RetryMax at most, so the reflector's own back-off is never reached for an
// outage. An answer the API server gave (403, 404, 410 Gone, 429) is
// returned at once: the reflector relists, or backs off as it should.
package rewatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

const (
	// RetryMin is the first wait after a failed try.
	RetryMin = 100 * time.Millisecond
	// RetryMax caps the wait: the cache is at most about this late after
	// the API server comes back.
	RetryMax = time.Second
	// LogEvery spaces the log lines of one outage.
	LogEvery = 30 * time.Second
)

// Transient says whether err means the API server could not be reached or
// could not answer (a refused, reset or timed-out connection, or a 500,
// 502, 503 or 504), rather than an answer to act on.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		switch st.Status().Code {
		case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return true // no answer at all: the connection failed
}

// Wrap returns lw retrying transient failures of its List and Watch until
// they succeed, fail otherwise, or their context ends; log (may be the
// zero Logger) hears of each outage once every LogEvery.
func Wrap(lw toolscache.ListerWatcher, what string, log logr.Logger) toolscache.ListerWatcher {
	return &retrying{inner: toolscache.ToListerWatcherWithContext(lw), raw: lw, what: what, log: log, sleep: sleepCtx}
}

// NewInformer is a controller-runtime cache.Options.NewInformer whose
// informers use Wrap.
func NewInformer(log logr.Logger) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(Wrap(lw, kindOf(obj), log), obj, resync, idx)
	}
}

func kindOf(obj runtime.Object) string {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}

type retrying struct {
	inner toolscache.ListerWatcherWithContext
	raw   toolscache.ListerWatcher
	what  string
	log   logr.Logger
	// sleep waits d or until ctx ends, saying which; tests replace it.
	sleep func(ctx context.Context, d time.Duration) bool
}

var _ toolscache.ListerWatcherWithContext = (*retrying)(nil)

func (r *retrying) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

func (r *retrying) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

func (r *retrying) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return retry(ctx, r, "list", func() (runtime.Object, error) { return r.inner.ListWithContext(ctx, opts) })
}

func (r *retrying) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return retry(ctx, r, "watch", func() (watch.Interface, error) { return r.inner.WatchWithContext(ctx, opts) })
}

// IsWatchListSemanticsUnSupported passes on what the wrapped ListerWatcher
// says, so the reflector streams lists exactly when it would without Wrap.
func (r *retrying) IsWatchListSemanticsUnSupported() bool {
	u, ok := r.raw.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

// retry calls try until it returns something other than a transient
// failure, waiting RetryMin, doubling to RetryMax, with a fifth of jitter.
func retry[T any](ctx context.Context, r *retrying, verb string, try func() (T, error)) (T, error) {
	wait := RetryMin
	var since, logged time.Time
	for {
		v, err := try()
		if !Transient(err) {
			if !since.IsZero() && err == nil {
				r.log.Info("API server reachable again", "informer", r.what, "after", time.Since(since).Round(time.Millisecond))
			}
			return v, err
		}
		now := time.Now()
		if since.IsZero() {
			since = now
		}
		if logged.IsZero() || now.Sub(logged) >= LogEvery {
			r.log.Info("API server unreachable; retrying every second at most", "informer", r.what, "verb", verb, "for", now.Sub(since).Round(time.Second), "error", err.Error())
			logged = now
		}
		if !r.sleep(ctx, wait+time.Duration(rand.Int64N(int64(wait/5)+1))) {
			return v, err
		}
		wait = min(2*wait, RetryMax)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
