package controller

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/decide"
	"napwake.dev/operator/internal/schedule"
)

// scheduleRead is what one reconcile read of spec.schedule and the override
// annotations: decide's input, the Schedule condition (nil without a
// schedule) and what could not be read.
type scheduleRead struct {
	in        decide.Schedule
	condition *decide.Condition
	problems  []string
}

// readSchedule reads spec.schedule and the override annotations of the
// ManagedWorkload and its target (merged as decide.MergeAnnotations does).
// A schedule that cannot be read (an unknown zone, which the API server
// cannot check, or a window ending before it starts) is ignored; it and
// any unreadable override are problems for an InvalidSetting event.
func readSchedule(mw *napwakev1alpha1.ManagedWorkload, annotations map[string]string) scheduleRead {
	var out scheduleRead
	var problems []string
	out.in.KeepAwakeUntil, out.in.PauseUntil, problems = decide.ReadOverrides(annotations)
	if sp := mw.Spec.Schedule; sp != nil {
		s, err := schedule.Parse(sp.Windows(), sp.TimeZone)
		c := decide.Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonScheduleFollowed,
			Message: "awake " + strings.Join(sp.Windows(), ", ") + " in " + zoneName(sp.TimeZone)}
		if err != nil {
			c = decide.Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonInvalidSchedule,
				Message: "spec.schedule ignored: " + err.Error()}
			problems = append([]string{c.Message}, problems...)
		}
		out.in.Windows, out.condition = s, &c
	}
	out.problems = problems
	return out
}

func zoneName(zone string) string {
	if zone == "" {
		return "UTC"
	}
	return zone
}

// warnSchedule emits one InvalidSetting event for what could not be read,
// each time that changes, not once a reconcile; once all is readable again,
// a new problem warns again.
func (r *ManagedWorkloadReconciler) warnSchedule(s *reconcileScope) {
	said := strings.Join(s.sched.problems, "; ")
	if said == "" {
		r.warned.Delete(warnKey(client.ObjectKeyFromObject(s.mw), warnSchedule))
		return
	}
	r.warnOnce(s, warnSchedule, said)
}

func scheduleEqual(a, b *napwakev1alpha1.ManagedWorkload) bool {
	return equality.Semantic.DeepEqual(a.Status.Schedule, b.Status.Schedule)
}
