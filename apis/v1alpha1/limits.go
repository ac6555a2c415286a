package v1alpha1

import "time"

// The defaults and bounds of the ManagedWorkload's durations, in one place
// for the operator and the doorman. The CRD's markers on WakeSpec.MaxWait and
// ManagedWorkloadSpec.IdleAfter state the same bounds for the API server
// (markers cannot name a Go constant); e2e/api proves the two agree.
const (
	// DefaultMaxWait is how long the doorman holds a connection when
	// spec.wake.maxWait is unset: most HTTP clients wait at least 30 s, and
	// most workloads start well within two minutes.
	DefaultMaxWait = 2 * time.Minute
	// MaxMaxWait is the longest spec.wake.maxWait the API accepts.
	MaxMaxWait = time.Hour
	// MinIdleAfter and MaxIdleAfter bound spec.idleAfter: under a minute
	// would pause between a person's clicks; over a week nothing is saved.
	MinIdleAfter = time.Minute
	MaxIdleAfter = 168 * time.Hour
)
