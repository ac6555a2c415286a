package routing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing/epslice"
)

// The listening check: every Ready doorman pod accepts on each new port
// before a slice leads callers there.

// checkListening connects to every Ready doorman address of each route's
// families on each new port, retrying until ListenTimeout: the doorman
// starts listening once it sees the routes in status.
func (r *Router) checkListening(ctx context.Context, doormen []epslice.Doorman, routes []napwakev1alpha1.Route, fresh map[int32]bool) error {
	if len(fresh) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.ListenTimeout)
	defer cancel()
	var addrs []string
	for _, rt := range routes {
		if !fresh[rt.DoormanPort] {
			continue
		}
		for _, d := range doormen {
			for _, f := range rt.IPFamilies {
				if f == d.Family {
					addrs = append(addrs, net.JoinHostPort(d.IP, strconv.Itoa(int(rt.DoormanPort))))
				}
			}
		}
	}
	return forEach(ctx, r.opts.Concurrency, addrs, func(ctx context.Context, addr string) error {
		return r.waitListening(ctx, addr)
	})
}

func (r *Router) waitListening(ctx context.Context, addr string) error {
	t := time.NewTicker(100 * time.Millisecond) // 100 ms: the doorman needs a watch event to open a port
	defer t.Stop()
	for {
		c, err := r.opts.Dial(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("doorman pod at %s is not listening: %w", addr, err)
		case <-t.C:
		}
	}
}

// forEach runs fn on every item with at most n at once, and joins errors.
func forEach[T any](ctx context.Context, n int, items []T, fn func(context.Context, T) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, n)
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
