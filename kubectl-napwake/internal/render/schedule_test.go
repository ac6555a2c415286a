package render

import (
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// scheduled is the fleet with a schedule inside its window on api, a
// pause-until on web, and an unreadable schedule on db.
func scheduled() []napwakev1alpha1.ManagedWorkload {
	mws, _ := fleet()
	api, web, db := &mws[0], &mws[1], &mws[2]
	api.Spec.Schedule = &napwakev1alpha1.ScheduleSpec{Awake: []napwakev1alpha1.AwakeWindow{"Mon-Fri 08:00-19:00"}, TimeZone: "Europe/Berlin"}
	api.Status.Schedule = &napwakev1alpha1.ScheduleStatus{Awake: true, End: atp(3*time.Hour + 30*time.Minute), NextStart: atp(16*time.Hour + 30*time.Minute)}
	web.Spec.Schedule = &napwakev1alpha1.ScheduleSpec{Awake: []napwakev1alpha1.AwakeWindow{"Sat 10:00-14:00"}}
	web.Status.Schedule = &napwakev1alpha1.ScheduleStatus{NextStart: atp(91*time.Hour + 30*time.Minute), End: atp(95*time.Hour + 30*time.Minute),
		Override: napwakev1alpha1.OverridePause, OverrideUntil: atp(2 * time.Hour)}
	db.Spec.Schedule = &napwakev1alpha1.ScheduleSpec{Awake: []napwakev1alpha1.AwakeWindow{"Mon 08:00-09:00"}, TimeZone: "Mars/Olympus"}
	db.Status.Conditions = append(db.Status.Conditions, metav1.Condition{Type: napwakev1alpha1.ConditionSchedule, Status: metav1.ConditionFalse,
		Reason: napwakev1alpha1.ReasonInvalidSchedule, Message: `spec.schedule ignored: time zone "Mars/Olympus" is not an IANA zone`})
	return mws[:3]
}

func TestScheduleGolden(t *testing.T) {
	mws := scheduled()
	var b bytes.Buffer
	Status(&b, mws, nil, "preview-42", Options{Now: now, AllNamespaces: true})
	golden(t, "status-schedules", b.Bytes())
	for i, name := range []string{"describe-schedule", "describe-pause-until"} {
		b.Reset()
		Describe(&b, &mws[i], nil, Options{Now: now})
		golden(t, name, b.Bytes())
	}
}
