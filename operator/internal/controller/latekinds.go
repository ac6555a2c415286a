package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
)

// DefaultKindRecheck is how often the --target-kinds kinds the API server
// did not serve are looked for again: a CRD installed after the operator
// started is watched within it. Each look at a kind not yet served asks
// the API server for its groups (discovery), so not more often.
const DefaultKindRecheck = 30 * time.Second

// lateKinds starts the watch of each --target-kinds kind the API server
// did not serve when the manager started, once it does: a watch of a kind
// not served would fail the manager, so it cannot be set up front. Until
// then the kind's targets get TargetAvailable False TargetNotScalable
// (workload.NotServed); once watched, the watch's first list brings back
// every ManagedWorkload targeting an object of it.
type lateKinds struct {
	mapper meta.RESTMapper
	// watch starts the watch of one kind.
	watch func(schema.GroupVersionKind) error
	every time.Duration

	mu      sync.Mutex
	pending []schema.GroupVersionKind
}

// NeedLeaderElection: the watches feed the ManagedWorkload controller,
// which runs on the leader only.
func (l *lateKinds) NeedLeaderElection() bool { return true }

// Start looks for the pending kinds every l.every until all are watched
// or ctx ends.
func (l *lateKinds) Start(ctx context.Context) error {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if l.check(ctx) == 0 {
			<-ctx.Done() // all watched: nothing left to look for
		}
	}, l.every)
	return nil
}

// check starts the watch of every pending kind now served, and returns how
// many are still pending. A watch that fails to start is tried again.
func (l *lateKinds) check(ctx context.Context) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	left := l.pending[:0]
	for _, gvk := range l.pending {
		if _, err := l.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			left = append(left, gvk)
			continue
		}
		if err := l.watch(gvk); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Watching a --target-kinds kind the API server now serves", "kind", gvk.String())
			left = append(left, gvk)
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Watching a --target-kinds kind the API server now serves", "kind", gvk.String())
	}
	l.pending = left
	return len(left)
}
