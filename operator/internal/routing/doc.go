// Package routing is the operator's routing shell: it leads a paused
// workload's Services to the doorman and keeps them there
// (docs/design/pause-wake.md#routing-a-service; docs/architecture.md#a-pause).
//
// The decisions are pure and live in sub-packages: plan (which Service ports
// are routed and what the WakeOnRequest condition says), ports (the doorman
// port allocator) and epslice (the EndpointSlices). This package gathers
// their inputs from the API server and acts on them:
//
//   - Router.Route, while a workload pauses and stays paused: works routes
//     out afresh, allocates ports, persists status.doorman and the condition
//     BEFORE any slice is written, checks that every Ready doorman pod
//     listens on each new port (a TCP connect), then writes the slices.
//   - Router.Unroute and Router.Finalize take routes down and hold their
//     ports for a minute, in status, so a restarted or newly elected
//     operator honours the holds.
//   - Its own controllers re-route a namespace's paused workloads when a
//     Service or Ingress there changes, and rewrite every routed slice's
//     endpoints, many at once, when the Ready doorman pods change.
//
// Port uniqueness across concurrent reconciles: one allocator guarded by a
// mutex, seeded from every ManagedWorkload's status on first use (so holds
// survive restarts and leader changes), and a workload's routes persisted in
// its status before any slice leads callers to them. The allocator releases
// a port only once the status giving it up is written. Across operators
// whose leader leases overlap: a Lease per new port, created before a
// status names it, and that status write guarded by the resourceVersion
// the claim names (claims.go).
//
// The shell's files, by what each touches:
//
//   - router.go: the contract (Options, Router, New) and the entry points
//     Route, Unroute and Finalize, which order the steps below;
//   - gather.go: reads of Services, their own slices, Ingresses and the Ready
//     doorman pods, past the cache where a stale read would route wrongly;
//   - allocate.go: the port allocator, seeding, holds and new ports;
//   - claims.go: the port claims (Leases) guarding new ports against
//     another operator's allocator;
//   - status.go: status.doorman and WakeOnRequest writes, backoff, warnings;
//   - listen.go: the check that every Ready doorman pod listens on a port;
//   - slices.go: slice creates, updates and deletes, never of a slice
//     epslice.OwnerOf calls Foreign;
//   - controllers.go: its own controllers (re-route on Service and Ingress
//     changes; move routes when the doorman pods change);
//   - forwarded.go and forwarders.go: the NEG forwarder, with --neg-forwarder
//     (its Deployment, whose shape operator/internal/forwarder decides; the
//     forwarded slices; the controller that re-routes on its changes and
//     deletes it once its time is up).
//
// It must not decide what plan, ports, epslice or forwarder decide, keep
// state that is not in a status or on the object it concerns (but the
// allocator's cache of them), or write anything but EndpointSlices,
// status.doorman, the WakeOnRequest condition, the doorman port claims
// (Leases in the doorman's namespace) and, with the forwarder on,
// the napwake-forwarder-<workload> Deployments. With the forwarder off it
// never touches a forwarder. Its RBAC is
// the chart's (charts/napwake/templates/operator-rbac.yaml), proved by
// SubjectAccessReview in e2e/chart; no marker here generates any.
package routing
