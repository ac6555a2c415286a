package routing

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing/plan"
	"napwake.dev/operator/internal/routing/ports"
)

// Doorman ports: the allocator seeded from every status, the holds a
// released port keeps, and the ports a pause takes.

// seed records every ManagedWorkload's ports and holds in the allocator,
// once, read past the cache.
func (r *Router) seed(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seeded {
		return nil
	}
	var list napwakev1alpha1.ManagedWorkloadList
	if err := r.reader.List(ctx, &list); err != nil {
		return fmt.Errorf("listing ManagedWorkloads to seed the doorman port allocator: %w", err)
	}
	kept := map[*napwakev1alpha1.ManagedWorkload]map[int32]bool{}
	for i := range list.Items {
		mw := &list.Items[i]
		if mw.Status.Doorman == nil {
			continue
		}
		c := r.alloc.Observe(keyOf(mw), portsOf(mw.Status.Doorman.Routes), holdsOf(mw))
		if len(c) > 0 {
			log.FromContext(ctx).Info("Doorman ports recorded by two ManagedWorkloads; re-routing the later one", "managedWorkload", klogKey(mw), "ports", c)
		}
		named := portsNamed(mw)
		for _, p := range c {
			delete(named, p)
		}
		kept[mw] = named
	}
	if err := r.adoptClaims(ctx, kept); err != nil {
		return err
	}
	r.seeded = true
	return nil
}

func keyOf(mw *napwakev1alpha1.ManagedWorkload) ports.Key {
	return ports.Key{Namespace: mw.Namespace, Name: mw.Name}
}

func klogKey(mw *napwakev1alpha1.ManagedWorkload) string { return mw.Namespace + "/" + mw.Name }

func holdsOf(mw *napwakev1alpha1.ManagedWorkload) []ports.Hold {
	if mw.Status.Doorman == nil {
		return nil
	}
	out := make([]ports.Hold, 0, len(mw.Status.Doorman.PortHolds))
	for _, h := range mw.Status.Doorman.PortHolds {
		out = append(out, ports.Hold{Port: h.Port, Until: h.Until.Time})
	}
	return out
}

// allocate gives each wanted route a doorman port, keeping the port of a
// route the workload already had.
func (r *Router) allocate(mw *napwakev1alpha1.ManagedWorkload, wants []plan.Want, old []napwakev1alpha1.Route, now time.Time) ([]napwakev1alpha1.Route, []ports.Hold, error) {
	k := keyOf(mw)
	had := map[routeKey]int32{}
	for _, rt := range old {
		had[routeKey{rt.Service, rt.PortName, rt.Port}] = rt.DoormanPort
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alloc.Expire(now)
	var keep []int32
	fresh := 0
	kept := map[routeKey]int32{}
	for _, w := range wants {
		rk := routeKey{w.Service, w.PortName, w.Port}
		if p, ok := had[rk]; ok {
			if o, owned := r.alloc.Owner(p); owned && o == k {
				keep = append(keep, p)
				kept[rk] = p
				continue
			}
		}
		fresh++
	}
	until := now.Add(r.opts.PortHold)
	got, err := r.alloc.Claim(k, keep, fresh, now)
	if err != nil {
		return nil, r.alloc.Giving(k, nil, until), err
	}
	routes := make([]napwakev1alpha1.Route, 0, len(wants))
	for _, w := range wants {
		p, ok := kept[routeKey{w.Service, w.PortName, w.Port}]
		if !ok {
			p, got = got[0], got[1:]
		}
		routes = append(routes, napwakev1alpha1.Route{Service: w.Service, PortName: w.PortName, Port: w.Port, DoormanPort: p, IPFamilies: w.IPFamilies, Forwarded: w.Forwarded})
	}
	return routes, r.alloc.Giving(k, portsOf(routes), until), nil
}

// settle has the allocator follow a status write that succeeded: the
// workload keeps the ports of routes, the others it owned are released
// with their holds. Only a written status releases a port: after a failed
// write every port the status may still name stays claimed.
func (r *Router) settle(mw *napwakev1alpha1.ManagedWorkload, routes []napwakev1alpha1.Route, released []ports.Hold) {
	until := r.clock.Now().Add(r.opts.PortHold)
	for _, h := range released {
		until = laterOf(until, h.Until)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alloc.Settle(keyOf(mw), portsOf(routes), until)
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func portsOf(routes []napwakev1alpha1.Route) []int32 {
	out := make([]int32, 0, len(routes))
	for _, rt := range routes {
		out = append(out, rt.DoormanPort)
	}
	return out
}

func newPorts(routes, old []napwakev1alpha1.Route) map[int32]bool {
	had := map[int32]bool{}
	for _, rt := range old {
		had[rt.DoormanPort] = true
	}
	out := map[int32]bool{}
	for _, rt := range routes {
		if !had[rt.DoormanPort] {
			out[rt.DoormanPort] = true
		}
	}
	return out
}
