// Package soak is the soak driver's arithmetic: reading the few series it
// needs from a Prometheus text exposition, and judging a run's samples
// against the bounds (RSS drift under 10 %, goroutines and
// descriptors back to baseline, no table growing).
//
// It must not talk to a cluster or read a clock: the driver in
// e2e/cmd/soak scrapes, times and passes the numbers in.
package soak
