package controller

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// setSchedule sets spec.schedule to windows in zone.
func (f *fixture) setSchedule(zone string, windows ...string) {
	f.t.Helper()
	mw := f.managedWorkload()
	sp := &napwakev1alpha1.ScheduleSpec{TimeZone: zone}
	for _, w := range windows {
		sp.Awake = append(sp.Awake, napwakev1alpha1.AwakeWindow(w))
	}
	mw.Spec.Schedule = sp
	must(f.t, k8s.Update(f.ctx, mw))
}

// window writes [from, to) as a window of from's weekday in UTC.
func window(from, to time.Time) string {
	end := to.Format("15:04")
	if to.Hour() == 0 && to.Minute() == 0 {
		end = "24:00"
	}
	return fmt.Sprintf("%s %s-%s", from.Weekday().String()[:3], from.Format("15:04"), end)
}

// wantPhase fails unless the ManagedWorkload is in phase with source.
func (f *fixture) wantPhase(phase napwakev1alpha1.Phase, source string) *napwakev1alpha1.ManagedWorkload {
	f.t.Helper()
	mw := f.managedWorkload()
	if mw.Status.Phase != phase || (source != "" && mw.Status.LastActivitySource != source) {
		f.t.Fatalf("phase %q source %q, want %q %q", mw.Status.Phase, mw.Status.LastActivitySource, phase, source)
	}
	return mw
}

func TestAWindowWakesAPausedWorkloadAtItsStartAndLetsItPauseAtItsEnd(t *testing.T) {
	f := newFixture(t, 2)
	f.r.SyncPeriod = 24 * time.Hour // so Wait's requeue shows as it is
	f.runToRunning()
	f.pauseIt()
	from := f.clock.Now().UTC().Truncate(time.Hour).Add(2 * time.Hour)
	if from.Hour() == 0 {
		from = from.Add(time.Hour) // the window stays on one day
	}
	to := from.Add(time.Hour)
	f.setSchedule("UTC", window(from, to))

	res := f.reconcile()
	mw := f.wantPhase(napwakev1alpha1.PhasePaused, "")
	if want := from.Sub(f.clock.Now()); res.RequeueAfter != want {
		t.Errorf("paused, requeue after %v, want exactly until the window's start, %v", res.RequeueAfter, want)
	}
	if c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionSchedule); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Schedule condition %+v, want True", c)
	}
	if s := mw.Status.Schedule; s == nil || s.Awake || s.NextStart == nil || !s.NextStart.Time.Equal(from) || s.End == nil || !s.End.Time.Equal(to) {
		t.Errorf("status.schedule %+v, want asleep, next %v to %v", s, from, to)
	}

	f.clock.SetTime(from)
	f.reconcile()
	mw = f.wantPhase(napwakev1alpha1.PhaseResuming, napwakev1alpha1.SourceSchedule)
	if !mw.Status.LastActivity.Time.Equal(from) {
		t.Errorf("lastActivity %v, want the window's start %v", mw.Status.LastActivity, from)
	}
	f.wantEvent(napwakev1alpha1.EventWaking, "woken by schedule window "+window(from, to))
	f.followSpec()
	f.reconcile()
	mw = f.wantPhase(napwakev1alpha1.PhaseRunning, napwakev1alpha1.SourceSchedule)
	if !mw.Status.PauseAt.Time.Equal(to) || !mw.Status.Schedule.Awake {
		t.Errorf("pauseAt %v awake %v, want the window's end %v inside it", mw.Status.PauseAt, mw.Status.Schedule.Awake, to)
	}

	// Idle for far longer than idleAfter (10m), it stays up inside the window.
	f.clock.SetTime(to.Add(-time.Minute))
	if res := f.reconcile(); res.RequeueAfter != time.Minute {
		t.Errorf("requeue after %v a minute before the window's end, want 1m", res.RequeueAfter)
	}
	f.wantPhase(napwakev1alpha1.PhaseRunning, "")

	f.clock.SetTime(to)
	f.reconcile()
	mw = f.wantPhase(napwakev1alpha1.PhasePausing, "")
	if mw.Status.Pause.Reason != napwakev1alpha1.PauseIdle {
		t.Errorf("pause reason %q at the window's end, want Idle", mw.Status.Pause.Reason)
	}
}

func TestKeepAwakeUntilWakesAPausedWorkloadAndHoldsItUntilThen(t *testing.T) {
	f := newFixture(t, 2)
	f.runToRunning()
	f.pauseIt()
	until := f.clock.Now().Add(time.Hour).UTC().Truncate(time.Second)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationKeepAwakeUntil, until.Format(time.RFC3339))
	f.reconcile()
	f.wantPhase(napwakev1alpha1.PhaseResuming, napwakev1alpha1.SourceAnnotation)
	f.wantEvent(napwakev1alpha1.EventWaking, "woken by annotation napwake.dev/keep-awake-until (until "+until.Format(time.RFC3339)+")")
	f.followSpec()
	f.reconcile()
	mw := f.wantPhase(napwakev1alpha1.PhaseRunning, "")
	if !mw.Status.PauseAt.Time.Equal(until) || mw.Status.Schedule == nil || mw.Status.Schedule.Override != napwakev1alpha1.OverrideKeepAwake {
		t.Errorf("pauseAt %v status.schedule %+v, want %v under keep-awake-until", mw.Status.PauseAt, mw.Status.Schedule, until)
	}
	// pause-requested does not pause it either.
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationPauseRequested, f.stamp())
	f.clock.SetTime(until.Add(-time.Second))
	f.reconcile()
	f.wantPhase(napwakev1alpha1.PhaseRunning, "")
	// Expired, it is ignored: the pause-requested it held off pauses it.
	f.clock.SetTime(until)
	f.reconcile()
	if mw := f.wantPhase(napwakev1alpha1.PhasePausing, ""); mw.Status.Schedule != nil {
		t.Errorf("status.schedule %+v after the override ran out, want none", mw.Status.Schedule)
	}
}

func TestPauseUntilPausesAWorkloadAndOnlyWakeRequestedWakesIt(t *testing.T) {
	f := newFixture(t, 2)
	f.runToRunning()
	until := f.clock.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationPauseUntil, until.Format(time.RFC3339))
	f.reconcile()
	mw := f.wantPhase(napwakev1alpha1.PhasePausing, "")
	if mw.Status.Pause.Reason != napwakev1alpha1.PauseRequested {
		t.Errorf("pause reason %q, want Requested", mw.Status.Pause.Reason)
	}
	f.wantEvent(napwakev1alpha1.EventPausing, "napwake.dev/pause-until "+until.Format(time.RFC3339))
	f.followSpec()
	f.reconcile()
	f.wantPhase(napwakev1alpha1.PhasePaused, "")

	// A request through the doorman does not wake it.
	f.clock.Step(time.Minute)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastRequest, f.stamp())
	f.reconcile()
	f.wantPhase(napwakev1alpha1.PhasePaused, "")

	// wake-requested does, and it then stays up under the idle rules.
	f.clock.Step(time.Minute)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationWakeRequested, f.stamp())
	f.reconcile()
	f.wantPhase(napwakev1alpha1.PhaseResuming, napwakev1alpha1.SourceWakeRequested)
	f.followSpec()
	f.reconcile()
	f.clock.Step(5 * time.Minute)
	f.reconcile()
	f.wantPhase(napwakev1alpha1.PhaseRunning, "")
}

func TestAnUnknownZoneAndAnUnreadableOverrideAreReportedAndIgnored(t *testing.T) {
	f := newFixture(t, 2)
	f.runToRunning()
	f.pauseIt()
	from := f.clock.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	f.setSchedule("Mars/Olympus_Mons", window(from, from.Add(time.Minute)))
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationPauseUntil, "in two hours")
	f.reconcile()
	mw := f.wantPhase(napwakev1alpha1.PhasePaused, "")
	c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionSchedule)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != napwakev1alpha1.ReasonInvalidSchedule {
		t.Fatalf("Schedule condition %+v, want False InvalidSchedule", c)
	}
	f.wantEvent(napwakev1alpha1.EventInvalidSetting, `time zone "Mars/Olympus_Mons" is not an IANA zone`)
	// One event for it, not one a reconcile.
	f.reconcile()
	select {
	case e := <-f.events.Events:
		t.Errorf("a second event %q for the same problem", e)
	default:
	}
	// The unreadable pause-until does not keep a request from waking it.
	f.clock.Step(time.Second)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastRequest, f.stamp())
	f.reconcile()
	f.wantPhase(napwakev1alpha1.PhaseResuming, napwakev1alpha1.SourceRequest)
}
