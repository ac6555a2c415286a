package kube

import (
	"slices"
	"strings"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/proxy"
)

// Conflict is one doorman port claimed for more than one Service port
// (docs/design/security.md#route-conflicts): two tenants' ManagedWorkloads, a status written
// by someone else, or two operator leaders overlapping. The doorman serves
// neither side; the operator, which alone allocates ports, repairs it.
type Conflict struct {
	DoormanPort int
	// Workloads are every ManagedWorkload claiming the port, sorted.
	Workloads []proxy.Workload
}

// key is what a conflict warning is deduplicated by.
func (c Conflict) key() string {
	names := make([]string, len(c.Workloads))
	for i, w := range c.Workloads {
		names[i] = w.Key()
	}
	return strings.Join(names, ",")
}

// Routes turns ManagedWorkloads' status.doorman.routes into the proxy's,
// leaving out every port claimed for more than one Service port; those are
// returned as conflicts. Workloads sharing one Service port (a Service in
// front of several paused workloads) share its doorman port, and that is
// no conflict.
func Routes(mws []napwakev1alpha1.ManagedWorkload) ([]proxy.Route, []Conflict) {
	byPort := map[int][]proxy.Route{}
	var ports []int
	for i := range mws {
		mw := &mws[i]
		if mw.Status.Doorman == nil || mw.DeletionTimestamp != nil && len(mw.Status.Doorman.Routes) == 0 {
			continue
		}
		w := WorkloadOf(mw)
		for _, r := range mw.Status.Doorman.Routes {
			p := int(r.DoormanPort)
			if _, ok := byPort[p]; !ok {
				ports = append(ports, p)
			}
			byPort[p] = append(byPort[p], proxy.Route{DoormanPort: p, Service: r.Service, PortName: r.PortName, Port: r.Port, Workload: w})
		}
	}
	var out []proxy.Route
	var conflicts []Conflict
	for _, p := range ports {
		rs := byPort[p]
		if !oneServicePort(rs) {
			conflicts = append(conflicts, conflictOf(p, rs))
			continue
		}
		out = append(out, rs...)
	}
	return out, conflicts
}

// oneServicePort says whether every route leads to the same Service port.
func oneServicePort(rs []proxy.Route) bool {
	for _, r := range rs[1:] {
		if r.Key() != rs[0].Key() || r.Port != rs[0].Port {
			return false
		}
	}
	return true
}

func conflictOf(port int, rs []proxy.Route) Conflict {
	c := Conflict{DoormanPort: port}
	for _, r := range rs {
		if !slices.ContainsFunc(c.Workloads, func(w proxy.Workload) bool { return w.Key() == r.Workload.Key() }) {
			c.Workloads = append(c.Workloads, r.Workload)
		}
	}
	slices.SortFunc(c.Workloads, func(a, b proxy.Workload) int { return strings.Compare(a.Key(), b.Key()) })
	return c
}
