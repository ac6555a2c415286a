package rewatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

func TestTransientTellsAnOutageFromAnAnswer(t *testing.T) {
	gr := schema.GroupResource{Group: "napwake.dev", Resource: "managedworkloads"}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{}}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", fmt.Errorf("Get https://10.96.0.1:443/api: %w", syscall.ECONNREFUSED), true},
		{"dial error", refused, true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"a request's own timeout", context.DeadlineExceeded, true},
		{"503 from an API server still starting", apierrors.NewServiceUnavailable("starting"), true},
		{"500, etcd leader changed", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true},
		{"504", apierrors.NewTimeoutError("slow", 1), true},
		{"the context ended: stop", context.Canceled, false},
		{"403: RBAC, retrying fast would not help", apierrors.NewForbidden(gr, "", errors.New("no")), false},
		{"404: the CRD is not installed", apierrors.NewNotFound(gr, ""), false},
		{"410 Gone: the reflector relists", apierrors.NewResourceExpired("too old"), false},
		{"429: the reflector backs off, as asked", apierrors.NewTooManyRequests("slow down", 1), false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// scripted fails each call with the next error of errs, then answers.
type scripted struct {
	errs  []error
	calls int
}

func (s *scripted) next() error {
	s.calls++
	if len(s.errs) == 0 {
		return nil
	}
	err := s.errs[0]
	s.errs = s.errs[1:]
	return err
}

func (s *scripted) List(metav1.ListOptions) (runtime.Object, error) {
	if err := s.next(); err != nil {
		return nil, err
	}
	return &corev1.PodList{}, nil
}

func (s *scripted) Watch(metav1.ListOptions) (watch.Interface, error) {
	if err := s.next(); err != nil {
		return nil, err
	}
	return watch.NewEmptyWatch(), nil
}

// waits records the waits asked for, and ends after limit of them.
type waits struct {
	got   []time.Duration
	limit int
}

func (w *waits) sleep(_ context.Context, d time.Duration) bool {
	w.got = append(w.got, d)
	return len(w.got) < w.limit
}

func wrapped(s *scripted, w *waits) *retrying {
	r := Wrap(s, "Pod", logr.Discard()).(*retrying)
	r.sleep = w.sleep
	return r
}

func TestAListOrWatchFailingForAnOutageIsRetriedWithinASecond(t *testing.T) {
	refused := fmt.Errorf("dial tcp 10.96.0.1:443: %w", syscall.ECONNREFUSED)
	for _, verb := range []string{"list", "watch"} {
		s := &scripted{errs: []error{refused, refused, refused, refused, refused, refused, refused}}
		w := &waits{limit: 100}
		r := wrapped(s, w)
		var err error
		if verb == "list" {
			_, err = r.ListWithContext(context.Background(), metav1.ListOptions{})
		} else {
			_, err = r.WatchWithContext(context.Background(), metav1.ListOptions{})
		}
		if err != nil {
			t.Fatalf("%s: %v, want the answer after the outage", verb, err)
		}
		if s.calls != 8 || len(w.got) != 7 {
			t.Fatalf("%s: %d calls and %d waits, want 8 and 7", verb, s.calls, len(w.got))
		}
		want := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
		for i, d := range w.got {
			lo := want[i] * time.Millisecond
			if d < lo || d > lo+lo/5 {
				t.Errorf("%s: wait %d = %v, want %v plus at most a fifth", verb, i, d, lo)
			}
		}
	}
}

func TestAnAnswerOfTheAPIServerIsReturnedAtOnce(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old resource version")
	s := &scripted{errs: []error{syscall.ECONNREFUSED, gone}}
	w := &waits{limit: 100}
	_, err := wrapped(s, w).WatchWithContext(context.Background(), metav1.ListOptions{})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("got %v, want the 410 Gone the reflector relists on", err)
	}
	if s.calls != 2 || len(w.got) != 1 {
		t.Fatalf("%d calls and %d waits, want 2 and 1", s.calls, len(w.got))
	}
}

func TestAStoppedInformerStopsRetrying(t *testing.T) {
	s := &scripted{errs: []error{syscall.ECONNREFUSED, syscall.ECONNREFUSED, syscall.ECONNREFUSED}}
	w := &waits{limit: 2} // the context ends during the second wait
	_, err := wrapped(s, w).ListWithContext(context.Background(), metav1.ListOptions{})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want the last failure", err)
	}
	if s.calls != 2 {
		t.Fatalf("%d calls, want 2: none after the stop", s.calls)
	}
	if got := sleepCtx(canceled(), time.Hour); got {
		t.Fatal("sleepCtx on an ended context said it waited")
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// withSemantics is a ListerWatcher that says it cannot stream lists.
type withSemantics struct{ scripted }

func (withSemantics) IsWatchListSemanticsUnSupported() bool { return true }

func TestTheWrappedListerWatchersStreamingSayIsPassedOn(t *testing.T) {
	plain := Wrap(&scripted{}, "Pod", logr.Discard())
	no := Wrap(&withSemantics{}, "Pod", logr.Discard())
	type says interface{ IsWatchListSemanticsUnSupported() bool }
	if plain.(says).IsWatchListSemanticsUnSupported() {
		t.Error("a plain ListerWatcher's wrapper says it cannot stream lists")
	}
	if !no.(says).IsWatchListSemanticsUnSupported() {
		t.Error("the wrapper of one that cannot stream lists says it can")
	}
}
