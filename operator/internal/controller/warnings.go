package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// The kinds of InvalidSetting warning warnOnce gives.
const (
	warnZone     = "forecast-zone"
	warnState    = "forecast-state"
	warnSchedule = "schedule"
)

func warnKey(key types.NamespacedName, kind string) string { return key.String() + "/" + kind }

// warnOnce emits an InvalidSetting warning, once for each message of kind.
func (r *ManagedWorkloadReconciler) warnOnce(s *reconcileScope, kind, msg string) {
	key := warnKey(client.ObjectKeyFromObject(s.mw), kind)
	if old, ok := r.warned.Load(key); ok && old == msg {
		return
	}
	r.warned.Store(key, msg)
	r.Recorder.Eventf(s.mw, nil, corev1.EventTypeWarning, napwakev1alpha1.EventInvalidSetting, napwakev1alpha1.EventInvalidSetting, "%s", msg)
}

// forgetWarnings forgets the warnings given for a ManagedWorkload gone.
func (r *ManagedWorkloadReconciler) forgetWarnings(key types.NamespacedName) {
	for _, kind := range []string{warnZone, warnState, warnSchedule} {
		r.warned.Delete(warnKey(key, kind))
	}
}
