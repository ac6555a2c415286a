// Package deps owns the decisions about dependencies between
// ManagedWorkloads (docs/design/dependencies.md): who wakes with a workload, who is
// held awake by whom and since when they are free, which learned edges to
// keep, which Pod a request came from, and the Dependencies condition that
// says so. It must not make API calls or read a clock: the reconciler feeds
// it objects and times and acts on what it returns.
//
// # The graph
//
// Graph is an index over every ManagedWorkload, fed one object at a time
// (Upsert, Delete; SetNamespace for a Namespace's
// napwake.dev/dependents-from), so no decision lists all ManagedWorkloads.
// It keeps each workload's declared edges (spec.dependencies, resolved to
// namespace/name), its learned edges (status.dependencies.learned), the
// reverse of both, and each workload's phase and own idle deadline. Feed it
// from the ManagedWorkload and Namespace informers' event handlers (or at the
// top of each reconcile), and enqueue the keys Upsert, Delete and
// SetNamespace return: those are the workloads whose decisions the change
// may have moved. Its answers are only as complete as what it was fed, so
// ask it nothing before the informers have synced. It is safe for
// concurrent use.
//
// An edge from A to B is honoured when B has a ManagedWorkload and, if B is
// in another namespace, B's Namespace lists A's in dependents-from (or says
// "*"). A refused edge is reported (DependencyNotFound,
// DependencyNotAllowed) and never stops the other edges. An edge from a
// workload to itself is ignored and said so on the condition, which stays
// True: a namespace-wide napwake.dev/depends-on names the dependency itself
// too, and that is harmless.
//
// # Waking
//
// Wake walks declared and learned edges transitively from the woken
// workload; every workload reached is in the plan once, whatever the cycles
// and diamonds, so the reconciler can start every wake at once.
//
// # Holding awake
//
// A declared dependency is not paused while a dependent is awake (Running,
// Resuming or Pausing). Holding is transitive through workloads that are
// awake only because they are held: in front → api → db, a running front
// holds api, and api (held, so awake) holds db. That is why transitivity
// applies: front needs db through api, and counting only direct dependents
// gives the same answer in a chain anyway (api is awake, so it holds db).
// What transitivity must not do is let a cycle hold itself: with only
// "an awake direct dependent holds", a ↔ b would keep each other awake for
// ever. Learned edges never hold.
// A cycle must not hold itself up for ever, so a dependent D holds X only if
// a path of awake workloads leads from some root R to X, where R is awake on
// its own account (Resuming, Pausing, or Running before its own idle
// deadline) or X does not lead back to R. In an acyclic graph that is
// exactly "an awake dependent holds"; in a cycle whose members are all past
// their own idle deadline nothing is held, so the cycle pauses.
//
// When the last holder stops being awake, the dependency's idle clock counts
// from then (Hold.ReleasedAt). That time moves only the Running idle clock:
// it is not activity, and must never call off a pause or wake anything, or a
// cycle would wake itself for ever.
//
// # Learning
//
// CallerOf maps napwake.dev/last-request-from to the one Running Pod that
// certainly held that address when the request came and belongs to a
// ManagedWorkload; Learn folds what it finds into the caller's learned list,
// dropping edges unseen for LearnedTTL.
package deps
