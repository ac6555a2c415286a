// Package gitops tells whether a GitOps controller owns a workload's
// spec.replicas, from the object's managedFields. Argo CD with self-heal,
// or Flux, re-applies the manifest's replicas to a paused workload and
// wakes it at once, every time: Napwake cannot stop that, but it can say
// so, with the fix, on the GitOps condition and an event.
//
// It is pure: it reads managedFields it is given and returns a condition.
package gitops
