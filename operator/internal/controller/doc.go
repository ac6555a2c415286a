// Package controller holds the operator's reconcilers: the ManagedWorkload
// reconciler that pauses and wakes workloads, and the opt-in reconciler that
// creates ManagedWorkloads for labelled Deployments, StatefulSets and
// Namespaces. The decisions themselves live in package decide; this package
// reads the cluster, asks decide, and writes the result in a crash-safe order.
package controller
