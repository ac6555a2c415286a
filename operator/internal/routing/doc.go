// Package routing is the operator's routing shell: it leads a paused
// workload's Services to the doorman and keeps them there (wake-on-request.md
// "How it works", "When a workload isn't routed"; design.md section 5).
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
// its status before any slice leads callers to them.
//
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=napwake.dev,resources=managedworkloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=napwake.dev,resources=managedworkloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch
package routing
