package routing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

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
	var addrs []string
	for _, rt := range routes {
		if !fresh[rt.DoormanPort] {
			continue
		}
		for _, d := range doormen {
			if slices.Contains(rt.IPFamilies, d.Family) {
				addrs = append(addrs, doormanAddr(d.IP, rt.DoormanPort))
			}
		}
	}
	deaf := r.unheard(ctx, addrs)
	errs := make([]error, 0, len(deaf))
	for _, addr := range sortedKeys(deaf) {
		errs = append(errs, deaf[addr])
	}
	return errors.Join(errs...)
}

// unheard connects to each address, retrying until ListenTimeout, and
// returns those that never accepted, each with why.
func (r *Router) unheard(ctx context.Context, addrs []string) map[string]error {
	if len(addrs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.ListenTimeout)
	defer cancel()
	var mu sync.Mutex
	deaf := map[string]error{}
	_ = forEach(ctx, r.opts.Concurrency, addrs, func(ctx context.Context, addr string) error {
		if err := r.waitListening(ctx, addr); err != nil {
			mu.Lock()
			deaf[addr] = err
			mu.Unlock()
		}
		return nil
	})
	return deaf
}

// joining gives each slice the doormen it may list: those it lists
// already, and each new one only once it accepts on every port of the
// slice (a new doorman pod is checked before it joins a slice, as a new
// port is before its slice is written; docs/security.md). deaf names the
// new ones that did not, which a later pass checks again.
func (r *Router) joining(ctx context.Context, ss []*discoveryv1.EndpointSlice, doormen []epslice.Doorman) (admitted [][]epslice.Doorman, deaf []string) {
	var addrs []string
	for _, s := range ss {
		listed := listedIPs(s)
		for _, d := range doormen {
			if string(d.Family) != string(s.AddressType) || listed[d.IP] {
				continue
			}
			for _, p := range s.Ports {
				if p.Port != nil {
					addrs = append(addrs, doormanAddr(d.IP, *p.Port))
				}
			}
		}
	}
	unheard := r.unheard(ctx, addrs)
	refused := map[string]bool{}
	for _, s := range ss {
		listed := listedIPs(s)
		var ok []epslice.Doorman
		for _, d := range doormen {
			if !listed[d.IP] && slices.ContainsFunc(s.Ports, func(p discoveryv1.EndpointPort) bool {
				return p.Port != nil && unheard[doormanAddr(d.IP, *p.Port)] != nil
			}) {
				refused[d.IP] = true
				continue
			}
			ok = append(ok, d)
		}
		admitted = append(admitted, ok)
	}
	return admitted, sortedKeys(refused)
}

func listedIPs(s *discoveryv1.EndpointSlice) map[string]bool {
	out := map[string]bool{}
	for _, e := range s.Endpoints {
		for _, a := range e.Addresses {
			out[a] = true
		}
	}
	return out
}

func doormanAddr(ip string, port int32) string {
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
