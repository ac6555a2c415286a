package kube

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/addr"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/shared/testenv"
)

func routed(ns, name string, routes ...napwakev1alpha1.Route) napwakev1alpha1.ManagedWorkload {
	return napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhasePaused, Doorman: &napwakev1alpha1.DoormanStatus{Routes: routes}}}
}

func route(service string, port, doormanPort int32) napwakev1alpha1.Route {
	return napwakev1alpha1.Route{Service: service, PortName: "http", Port: port, DoormanPort: doormanPort}
}

func TestRoutesServeNeitherSideOfAConflict(t *testing.T) {
	tests := []struct {
		name          string
		mws           []napwakev1alpha1.ManagedWorkload
		wantPorts     []int
		wantConflicts map[int]string
	}{
		{"each workload on its own port is served",
			[]napwakev1alpha1.ManagedWorkload{routed("a", "api", route("api", 80, 20001)), routed("b", "api", route("api", 80, 20002))},
			[]int{20001, 20002}, nil},
		{"two tenants claiming one port: neither is served",
			[]napwakev1alpha1.ManagedWorkload{routed("a", "api", route("api", 80, 20001)), routed("b", "api", route("api", 80, 20001))},
			nil, map[int]string{20001: "a/api,b/api"}},
		{"workloads sharing one Service port share its doorman port",
			[]napwakev1alpha1.ManagedWorkload{routed("a", "blue", route("web", 80, 20001)), routed("a", "green", route("web", 80, 20001))},
			[]int{20001, 20001}, nil},
		{"one workload's two Services on one port conflict with each other",
			[]napwakev1alpha1.ManagedWorkload{routed("a", "api", route("api", 80, 20001), route("admin", 80, 20001))},
			nil, map[int]string{20001: "a/api"}},
		{"one Service's two ports on one doorman port conflict",
			[]napwakev1alpha1.ManagedWorkload{routed("a", "api", route("api", 80, 20001), route("api", 443, 20001))},
			nil, map[int]string{20001: "a/api"}},
		{"a conflict on one port leaves the others served",
			[]napwakev1alpha1.ManagedWorkload{routed("a", "api", route("api", 80, 20001), route("api", 81, 20003)), routed("b", "db", route("db", 5432, 20001))},
			[]int{20003}, map[int]string{20001: "a/api,b/db"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			routes, conflicts := Routes(tt.mws)
			var ports []int
			for _, r := range routes {
				ports = append(ports, r.DoormanPort)
			}
			if fmt.Sprint(ports) != fmt.Sprint(tt.wantPorts) {
				t.Errorf("served ports %v, want %v", ports, tt.wantPorts)
			}
			got := map[int]string{}
			for _, c := range conflicts {
				got[c.DoormanPort] = c.key()
			}
			if fmt.Sprint(got) != fmt.Sprint(map[int]string(tt.wantConflicts)) && (len(got) != 0 || len(tt.wantConflicts) != 0) {
				t.Errorf("conflicts %v, want %v", got, tt.wantConflicts)
			}
		})
	}
}

// TestTwoTenantsClaimingOnePortAreBothRefusedAndWarned runs the doorman
// against a real API server: a port two namespaces' ManagedWorkloads claim
// is not listened on, a RouteConflict warning lands on each, and once the
// operator gives one of them another port both are served.
func TestTwoTenantsClaimingOnePortAreBothRefusedAndWarned(t *testing.T) {
	nsA, nsB, nsC := newNamespace(t), newNamespace(t), newNamespace(t)
	shared, own, moved := freeDoormanPort(t), freeDoormanPort(t), freeDoormanPort(t)
	startDoormanWith(t, clock.RealClock{}, proxy.DefaultLimits())
	pausedAt := time.Now().Add(-time.Minute)
	createMW(t, nsA, shared, napwakev1alpha1.PhasePaused, pausedAt)
	createMW(t, nsB, shared, napwakev1alpha1.PhasePaused, pausedAt)
	createMW(t, nsC, own, napwakev1alpha1.PhasePaused, pausedAt)

	dialPort(t, own) // the watcher has synced all three
	for _, ns := range []string{nsA, nsB} {
		testenv.EventuallyTrue(t, "a RouteConflict warning in "+ns, func() bool {
			for _, e := range events(t, ns, napwakev1alpha1.EventRouteConflict) {
				if e.Type == "Warning" && strings.Contains(e.Message, nsA+"/api, "+nsB+"/api") && strings.Contains(e.Message, strconv.Itoa(shared)) {
					return true
				}
			}
			return false
		})
	}
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(shared)); err == nil {
		_ = c.Close()
		t.Fatalf("the doorman listens on port %d, which two tenants claim", shared)
	}

	// The operator repairs it: nsB's route moves to a port of its own.
	mw := &napwakev1alpha1.ManagedWorkload{}
	if err := k8s.Get(context.Background(), apiKey(nsB), mw); err != nil {
		t.Fatal(err)
	}
	mw.Status.Doorman.Routes[0].DoormanPort = int32(moved)
	if err := k8s.Status().Update(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	dialPort(t, moved)
	dialPort(t, shared)
}

// apiKey is the key of the test workload "api" in ns.
func apiKey(ns string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: "api"} }

// A Service port no route names any more stays watched while its port
// lingers and drains, then leaves the watch and the table; one routed
// again in time starts afresh.
func TestKeysNoRouteNamesAreForgottenAfterTheDrain(t *testing.T) {
	table := proxy.NewTable()
	w := NewWatcher(nil, table, nil, addr.Rules{})
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return now }
	gone := proxy.ServiceKey{Namespace: "preview-7", Service: "api", PortName: "http"}
	back := proxy.ServiceKey{Namespace: "preview-8", Service: "api", PortName: "http"}
	eps := []netip.AddrPort{netip.MustParseAddrPort("10.244.0.9:8080")}
	for _, k := range []proxy.ServiceKey{gone, back} {
		w.known[k] = eps
		table.SetEndpoints(k, eps)
	}
	routeOf := func(k proxy.ServiceKey) proxy.Route {
		return proxy.Route{Service: k.Service, PortName: k.PortName, Workload: proxy.Workload{Namespace: k.Namespace, Name: "api"}}
	}
	w.forgetGone(nil) // both unrouted from now
	now = now.Add(forgetAfter - time.Second)
	w.forgetGone([]proxy.Route{routeOf(back)}) // back is routed again
	if len(table.Endpoints(gone)) == 0 || w.known[gone] == nil {
		t.Fatal("a key was forgotten before its port's drain was over")
	}
	now = now.Add(time.Second)
	w.forgetGone(nil)
	if len(table.Endpoints(gone)) != 0 || w.known[gone] != nil {
		t.Fatalf("a key unrouted for %v is still watched", forgetAfter)
	}
	if w.known[back] == nil {
		t.Fatal("a key routed again within the drain was forgotten")
	}
	// back went unrouted again just now: its clock starts afresh.
	now = now.Add(forgetAfter - time.Second)
	w.forgetGone(nil)
	if w.known[back] == nil {
		t.Fatal("a key routed again was forgotten on its old clock")
	}
}
