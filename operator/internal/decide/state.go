package decide

import (
	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// What a pause saved and how states compare: read by Next, and by the
// reconciler for a deleted workload and its metrics.

// WantReplicas is what a wake restores: the saved count, at least 1.
func WantReplicas(p *napwakev1alpha1.PauseStatus) int32 { return napwakev1alpha1.WakeReplicas(p) }

// Restore says what a ManagedWorkload being deleted must scale its target to
// first (napwakev1alpha1.RestoreReplicas, the rule uninstalling uses too).
func Restore(st State, t Target) (replicas int32, needed bool) {
	if !t.Found {
		return 0, false
	}
	return napwakev1alpha1.RestoreReplicas(st.Phase, st.Pause, t.Replicas)
}

// Equal says whether two states would persist the same.
func (s State) Equal(o State) bool {
	return s.Phase == o.Phase && s.LastActivitySource == o.LastActivitySource &&
		s.LastActivity.Equal(o.LastActivity) && s.PauseAt.Equal(o.PauseAt) && s.ResumedAt.Equal(o.ResumedAt) &&
		pauseEqual(s.Pause, o.Pause)
}

func pauseEqual(a, b *napwakev1alpha1.PauseStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Replicas == b.Replicas && a.Reason == b.Reason && a.StartedAt.Equal(&b.StartedAt)
}
