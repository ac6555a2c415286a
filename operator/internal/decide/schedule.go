package decide

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/schedule"
)

// Schedule is what spec.schedule and the override annotations say to the
// cycle (docs/design/schedules-forecast.md#precedence). The zero value
// says nothing. Precedence,
// highest first: keep-awake-until, pause-until (which yields only to
// wake-requested), a schedule window, then the idle rules.
//
//   - KeepAwakeUntil in force: nothing pauses the workload (idleness,
//     pause-requested, pause-until), a Pausing one has its pause called off
//     and a Paused one is woken (source "annotation"); pauseAt is no
//     earlier than it.
//   - PauseUntil in force: while Pausing or Paused only a wake-requested
//     newer than the pause's start wakes it (requests through the doorman,
//     last-activity, dependents, the Prometheus query, a window's start do
//     not); a target someone scales up is paused again. A Running or
//     Resuming workload is paused (reason Requested), unless a
//     wake-requested at or after its last pause's start (its creation when
//     it never paused) woke it: then the idle rules apply to it.
//   - Inside a window: a Paused or Pausing workload whose pause began
//     before the window's start (or before the moment pause-until ran out
//     in it) is woken (source "schedule", the event naming the window); a
//     Running one is not paused for idleness, pauseAt being no earlier than
//     the window's end. A pause begun inside the window (pause-requested)
//     holds until something else wakes it.
//
// An expired override is ignored; the reconciler leaves unreadable ones out
// (ReadOverrides) and reports them. Wait comes back at the next window
// start or end and at each override's expiry.
type Schedule struct {
	// Windows is the parsed schedule; nil for none (or one that could not
	// be read, which the reconciler reports).
	Windows *schedule.Schedule
	// KeepAwakeUntil is napwake.dev/keep-awake-until; zero when absent.
	KeepAwakeUntil time.Time
	// PauseUntil is napwake.dev/pause-until; zero when absent.
	PauseUntil time.Time
}

// ReadOverrides reads keep-awake-until and pause-until from the acting
// annotations (MergeAnnotations), expired or not; an unreadable one is left
// zero and comes back as a problem for an InvalidSetting event.
func ReadOverrides(annotations map[string]string) (keepAwakeUntil, pauseUntil time.Time, problems []string) {
	read := func(key string) time.Time {
		v := annotations[key]
		if v == "" {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s=%q is not an RFC 3339 time such as 2026-10-23T18:00:00Z; ignored", key, v))
			return time.Time{}
		}
		return t.UTC()
	}
	return read(napwakev1alpha1.AnnotationKeepAwakeUntil), read(napwakev1alpha1.AnnotationPauseUntil), problems
}

// policy is what the Schedule says at one instant.
type policy struct {
	// keepUntil, pauseUntil: the override in force ends then; zero when
	// none is (keep-awake-until in force puts pause-until out of force).
	keepUntil, pauseUntil time.Time
	// period is the window period now is in, when inWindow.
	period   schedule.Period
	inWindow bool
	// nextStart is the next window start after now; zero for none.
	nextStart time.Time
	// expiredPause is pause-until when it ran out at or before now.
	expiredPause time.Time
}

func policyOf(in Input, now time.Time) policy {
	sc := in.Schedule
	var p policy
	switch {
	case now.Before(sc.KeepAwakeUntil):
		p.keepUntil = sc.KeepAwakeUntil
	case now.Before(sc.PauseUntil):
		p.pauseUntil = sc.PauseUntil
	case !sc.PauseUntil.IsZero():
		p.expiredPause = sc.PauseUntil.Truncate(time.Second)
	}
	if sc.Windows != nil {
		p.period, p.inWindow = sc.Windows.Current(now)
		p.nextStart = sc.Windows.NextStart(now)
	}
	return p
}

// asleepSignal is the signal that wakes a Pausing or Paused workload under
// the policy, given latest, the newest activity: keep-awake-until's, only
// wake-requested's under pause-until, else the newer of latest and the
// window's start.
func (p policy) asleepSignal(in Input, now time.Time, latest signal) signal {
	switch {
	case !p.keepUntil.IsZero():
		return signal{at: now, source: napwakev1alpha1.SourceAnnotation,
			by: napwakev1alpha1.AnnotationKeepAwakeUntil + " (until " + p.keepUntil.UTC().Format(time.RFC3339) + ")"}
	case !p.pauseUntil.IsZero():
		if at, ok := parseTime(in.Annotations[napwakev1alpha1.AnnotationWakeRequested], now); ok {
			return signal{at: at, source: napwakev1alpha1.SourceWakeRequested}
		}
		return signal{}
	}
	if !p.inWindow || in.State.Pause == nil {
		return latest
	}
	at := p.period.Start.Truncate(time.Second)
	if p.expiredPause.After(at) {
		at = p.expiredPause // pause-until ran out inside the window: the schedule takes over then
	}
	if !at.After(in.State.Pause.StartedAt.Time) || !at.After(latest.at) {
		return latest
	}
	return signal{at: at, source: napwakev1alpha1.SourceSchedule, by: p.window(in)}
}

// window names the period for an event: "window Mon-Fri 08:00-19:00
// (08:00 to 19:00 Europe/Berlin)".
func (p policy) window(in Input) string {
	loc := in.Schedule.Windows.Location()
	return "window " + strings.Join(p.period.Windows, ", ") + " (" + p.period.Start.In(loc).Format("Mon 15:04") +
		" to " + p.period.End.In(loc).Format("Mon 15:04") + " " + loc.String() + ")"
}

// pauseStep is the pause an awake (Running or Resuming) workload takes
// before anything else under the policy: pause-requested, unless
// keep-awake-until holds it; pause-until, unless a wake-requested since
// its last pause woke it.
func (p policy) pauseStep(in Input, now time.Time) (Step, bool) {
	if !p.keepUntil.IsZero() {
		return Step{}, false
	}
	if !p.pauseUntil.IsZero() && !p.wokenOnRequest(in, now) {
		s := startPause(in, in.State, now, napwakev1alpha1.PauseRequested)
		s.Event.Message = "Pausing (" + napwakev1alpha1.AnnotationPauseUntil + " " + p.pauseUntil.UTC().Format(time.RFC3339) +
			"): saving " + itoa(in.Target.Replicas) + " replicas, then scaling to 0"
		return s, true
	}
	return pauseRequested(in, now)
}

// wokenOnRequest says a wake-requested at or after the last pause's start
// (the creation, before any pause) exempts an awake workload from
// pause-until.
func (p policy) wokenOnRequest(in Input, now time.Time) bool {
	at, ok := parseTime(in.Annotations[napwakev1alpha1.AnnotationWakeRequested], now)
	if !ok {
		return false
	}
	since := in.Created.Truncate(time.Second)
	if in.State.Pause != nil && in.State.Pause.StartedAt.After(since) {
		since = in.State.Pause.StartedAt.Time
	}
	return !at.Before(since)
}

// rescaled is the step for a Paused target someone scaled up: under
// pause-until it is paused again, saving the new count; ok is false
// otherwise (it wakes, source "scaled").
func (p policy) rescaled(in Input, now time.Time) (Step, bool) {
	if p.pauseUntil.IsZero() {
		return Step{}, false
	}
	return startPause(in, in.State, now, napwakev1alpha1.PauseRequested), true
}

// holdUntil is how late an idle pause is put off: the end of
// keep-awake-until, or of the window now is in (pause-until in force
// holds nothing); zero for no hold.
func (p policy) holdUntil() time.Time {
	switch {
	case !p.keepUntil.IsZero():
		if p.inWindow && p.period.End.After(p.keepUntil) {
			return p.period.End
		}
		return p.keepUntil
	case p.inWindow && p.pauseUntil.IsZero():
		return p.period.End
	}
	return time.Time{}
}

// nextChange is how long until the policy next changes on its own: a
// window's start or end, or an override's expiry; 0 when never.
func (p policy) nextChange(now time.Time) time.Duration {
	var soonest time.Time
	for _, t := range []time.Time{p.keepUntil, p.pauseUntil, p.nextStart, p.period.End} {
		if t.After(now) && (soonest.IsZero() || t.Before(soonest)) {
			soonest = t
		}
	}
	if soonest.IsZero() {
		return 0
	}
	return soonest.Sub(now)
}

// sooner is the shorter of two requeue delays, where 0 means none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// ScheduleStatus is status.schedule at now: where the windows are and which
// override is in force; nil when there is neither.
func ScheduleStatus(sc Schedule, now time.Time) *napwakev1alpha1.ScheduleStatus {
	p := policyOf(Input{Schedule: sc}, now.Truncate(time.Second))
	out := &napwakev1alpha1.ScheduleStatus{}
	switch {
	case !p.keepUntil.IsZero():
		out.Override, out.OverrideUntil = napwakev1alpha1.OverrideKeepAwake, metaTime(p.keepUntil)
	case !p.pauseUntil.IsZero():
		out.Override, out.OverrideUntil = napwakev1alpha1.OverridePause, metaTime(p.pauseUntil)
	}
	if sc.Windows != nil {
		out.Awake = p.inWindow
		out.NextStart = metaTime(p.nextStart)
		end := p.period.End
		if !p.inWindow && !p.nextStart.IsZero() {
			end = sc.Windows.End(p.nextStart)
		}
		out.End = metaTime(end)
	}
	if sc.Windows == nil && out.Override == "" {
		return nil
	}
	return out
}

func metaTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &m
}
