package proxy

import "context"

// notifier tells everyone waiting on some state "something changed, look
// again": a broadcast, as a context whose Done channel is closed at the
// next change and replaced by a fresh one for the waits after it.
//
// It has no lock of its own: the lock of the state it watches guards it,
// so a waiter takes the state and the context together (the Table's
// endpoints, the caps' free places and bytes), then checks the state and
// waits on the context. A change made after the look closes the context
// the waiter holds, so none is missed, and a waiter always looks again
// after waking, so a spurious wake costs a look.
//
// It is a context rather than a bare channel because a held connection
// waits in the netpoller for its caller's next bytes, not in a select:
// context.AfterFunc interrupts that read when the context is done,
// without a goroutine of its own while it waits (see conn.interrupt).
//
// The zero value is ready to use, and makes nothing until a waiter asks:
// a change nobody waits for costs nothing.
type notifier struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// next returns the context done at the next change.
func (n *notifier) next() context.Context {
	if n.ctx == nil {
		n.ctx, n.cancel = context.WithCancel(context.Background())
	}
	return n.ctx
}

// changed tells every waiter to look again.
func (n *notifier) changed() {
	if n.cancel != nil {
		n.cancel()
		n.ctx, n.cancel = nil, nil
	}
}

// doneOf returns ctx's Done channel, or nil (never ready in a select) for
// a nil ctx: a wait on nothing.
func doneOf(ctx context.Context) <-chan struct{} {
	if ctx == nil {
		return nil
	}
	return ctx.Done()
}
