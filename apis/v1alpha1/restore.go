package v1alpha1

// The one rule for letting go of a paused workload, shared by the operator
// (a ManagedWorkload being deleted) and by restoring without it (the chart's
// pre-delete hook and `kubectl napwake restore`; docs/uninstall.md).

// WakeReplicas is what a wake restores: the saved count, at least 1.
func WakeReplicas(p *PauseStatus) int32 {
	if p == nil || p.Replicas < 1 {
		return 1
	}
	return p.Replicas
}

// RestoreReplicas says what a target now at live replicas must be scaled to
// when Napwake lets go of it: needed is false unless a pause is under way or
// over and not yet undone (the workload is below what the pause saved).
func RestoreReplicas(phase Phase, pause *PauseStatus, live int32) (replicas int32, needed bool) {
	if pause == nil || phase == PhaseRunning || phase == "" {
		return 0, false
	}
	want := WakeReplicas(pause)
	return want, live < want
}
