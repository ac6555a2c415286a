// Package idlelevel learns a workload's own idle level for the default
// activity signal
// (docs/design/time.md#the-default-signal-cpu-against-the-idle-level):
// the CPU its busiest pod uses when
// nobody calls it, so that a JVM idling at 30m and a Go server idling at 1m
// are both "busy" only when they rise clearly above that, not above one
// fixed number.
//
// The level is a low percentile of the workload's usage over the last day,
// taken only from samples when no other activity signal fired: each hour
// keeps the lowest sample seen in it (Lows: one entry per hour, None for an
// hour without one, the last 24, newest last), and the
// level is the 25th percentile of those hourly lows, so one odd hour (a pod
// restarting at 0m, a busy hour with no quiet minute) moves it little. Until
// MinHours hours have a sample the level is 0: everything above the margin
// is busy, which can only keep a workload up longer, never pause it under
// its users (in its first hours a workload in steady use would otherwise
// learn its use as its idle level).
//
// It is pure: the reconciler passes samples and times and stores the
// result in status.usage, so the level survives an operator restart. It
// must not read a clock or the API.
package idlelevel
