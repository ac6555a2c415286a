package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"napwake.dev/doorman/internal/ask"
	"napwake.dev/doorman/internal/proxy"
)

// WakeKeyEvery is how often a doorman pod reads the wake key Secret: twice
// a minute, so each pod uses a new key within a minute of the Secret
// changing (ask.SignDelay).
const WakeKeyEvery = 30 * time.Second

// WakeKey keeps the wake key ring from the one Secret the doorman reads
// (the chart's napwake-doorman-wake-key), by name, with get and update
// only: the first pod to find it empty (or unreadable) fills it with a
// write guarded by the resourceVersion it read, so two pods starting
// together agree on one key; emptying it rotates the key. It implements
// proxy.Keys.
type WakeKey struct {
	client client.Client
	key    types.NamespacedName
	clock  clock.PassiveClock
	rnd    io.Reader
	log    logr.Logger

	ring    atomic.Pointer[ask.Ring]
	missing atomic.Bool   // the Secret was not found at the last read
	unknown chan struct{} // a click carried a key this pod does not know
}

// unknownEvery bounds the extra reads clicks with an unknown key cause: a
// flood of forged key ids costs at most one read of the Secret this often.
const unknownEvery = 5 * time.Second

var _ proxy.Keys = (*WakeKey)(nil)

// NewWakeKey returns a keeper of the Secret namespace/name; rnd is
// crypto/rand.Reader in the doorman.
func NewWakeKey(c client.Client, namespace, name string, clk clock.PassiveClock, rnd io.Reader, log logr.Logger) *WakeKey {
	k := &WakeKey{client: c, key: types.NamespacedName{Namespace: namespace, Name: name}, clock: clk, rnd: rnd, log: log,
		unknown: make(chan struct{}, 1)}
	k.ring.Store(&ask.Ring{})
	return k
}

// Ring is the ring as last read.
func (k *WakeKey) Ring() *ask.Ring { return k.ring.Load() }

// Unknown asks Run to read the Secret again soon: a click carried a key id
// this pod does not know, as when another pod has just filled it.
func (k *WakeKey) Unknown() {
	select {
	case k.unknown <- struct{}{}:
	default:
	}
}

// Refresh reads the Secret and takes what it holds into the ring, filling
// it first when it is empty or holds something unreadable. A Secret that
// is not found (deleted under a running doorman) leaves the ring as it is:
// the doorman may not create it, so it keeps signing with the key it has
// until the Secret is back.
func (k *WakeKey) Refresh(ctx context.Context) error {
	for range clickAttempts {
		var s corev1.Secret
		err := k.client.Get(ctx, k.key, &s)
		switch {
		case apierrors.IsNotFound(err):
			if !k.missing.Swap(true) {
				k.log.Info("The wake key Secret is missing: keeping the key this pod has until it is back", "secret", k.key)
			}
			return nil
		case err != nil:
			return fmt.Errorf("getting the wake key Secret %s: %w", k.key, err)
		}
		k.missing.Store(false)
		now := k.clock.Now()
		keys, err := ask.ParseSecret(s.Data)
		if err == nil {
			k.observe(keys, now)
			return nil
		}
		if !errors.Is(err, ask.ErrEmpty) {
			k.log.Info("The wake key Secret holds something unreadable: filling it with a new key", "secret", k.key, "reason", err.Error())
		}
		if keys, err = ask.Refill(k.Ring(), now, k.rnd); err != nil {
			return fmt.Errorf("making a wake key: %w", err)
		}
		s.Data = keys.Data()
		err = k.client.Update(ctx, &s) // guarded by s.ResourceVersion
		switch {
		case apierrors.IsConflict(err):
			continue // another pod filled it first: read what it wrote
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("filling the wake key Secret %s: %w", k.key, err)
		}
		k.log.Info("Filled the wake key Secret with a new key", "secret", k.key, "key", keys.Current.ID)
		k.observe(keys, now)
		return nil
	}
	return fmt.Errorf("filling the wake key Secret %s: it kept changing under this pod", k.key)
}

func (k *WakeKey) observe(keys ask.Keys, now time.Time) {
	old := k.Ring()
	next := old.Observe(keys, now)
	if next.Current().ID != old.Current().ID {
		k.log.Info("Using the wake key", "ring", next.String())
	}
	k.ring.Store(&next)
}

// Run refreshes at once, then every WakeKeyEvery, and after Unknown (at
// most once every unknownEvery), until ctx ends.
func (k *WakeKey) Run(ctx context.Context, c clock.Clock) {
	t := c.NewTimer(0)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.unknown:
			if c.Since(last) < unknownEvery {
				continue
			}
		case <-t.C():
		}
		last = c.Now()
		if err := k.Refresh(ctx); err != nil {
			k.log.Error(err, "Reading the wake key Secret")
		}
		if !t.Stop() {
			select {
			case <-t.C():
			default:
			}
		}
		t.Reset(WakeKeyEvery)
	}
}
