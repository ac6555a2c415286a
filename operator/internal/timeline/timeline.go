// Package timeline works out where a wake's time went (docs/pause.md#where-a-wakes-time-went),
// with no client and no clock: Of takes the times the operator recorded
// (the waking signal, Resuming written, the scale written, Running written)
// and the first pod the wake started, and returns the steps in order, the
// slowest, and advice on shortening it.
//
// Each step runs from the end of the one before it that is known:
//
//	woken      signal fired         → Resuming written
//	scaled     Resuming written     → scale written
//	scheduled  scale written        → PodScheduled True
//	started    scheduled            → last container started (image pull included)
//	ready      containers started   → Ready True
//	running    Ready                → Running written
//
// So the steps always add up to the total. A time that cannot be told (no
// pod of this wake seen, a pod older than the wake, no scale the operator
// wrote and remembers, a time earlier than the step before it
// by a second or more) leaves its step out, and the next step runs from
// the last time known; Note says which and why. The API keeps pod times and
// status times in whole seconds, so a time up to a second before the one
// before it counts as the same moment, never as a negative step.
package timeline

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// rounding is how far a time stored in whole seconds can fall before the
// moment it stands for.
const rounding = time.Second

// Input is what the operator knows of one wake.
type Input struct {
	// Source is the activity source that woke it.
	Source string
	// SignalAt is when the waking signal fired; zero when unknown, then
	// the wake starts at ResumedAt.
	SignalAt time.Time
	// ResumedAt is when Resuming was written (status.resumedAt).
	ResumedAt time.Time
	// ScaledAt is when the scale was written; zero when unknown.
	ScaledAt time.Time
	// RunningAt is when Running is written: the end of the wake.
	RunningAt time.Time
	// Pod is the wake's first Ready pod; nil when none was seen.
	Pod *corev1.Pod
}

// Step is one step of the timeline.
type Step struct {
	Name napwakev1alpha1.WakeStepName
	Took time.Duration
}

// Timeline is where a wake's time went.
type Timeline struct {
	// Start is when the wake started: the signal, else Resuming written.
	Start time.Time
	// Source woke it.
	Source string
	// Total is Start → RunningAt.
	Total time.Duration
	// Steps are the known steps, in order.
	Steps []Step
	// Slowest indexes Steps; -1 when there are none.
	Slowest int
	// Advice says how to shorten the slowest step.
	Advice string
	// Notes say which steps are left out and why.
	Notes []string
	// Pod names the pod whose times the pod's steps are; "" for none.
	Pod string
}

// point is the end of one step, when known.
type point struct {
	name napwakev1alpha1.WakeStepName
	at   time.Time
	// why it is unknown, when at is zero.
	why string
}

// Of works out the timeline of the wake in.
func Of(in Input) Timeline {
	tl := Timeline{Source: in.Source, Start: in.ResumedAt, Slowest: -1}
	woken := point{name: napwakev1alpha1.WakeStepWoken, why: "the waking signal's time is not known"}
	if !in.SignalAt.IsZero() && !in.SignalAt.After(in.ResumedAt.Add(rounding)) {
		// A signal read up to a second after resumedAt (the doorman's
		// stamp, never early but up to a second late) is the same moment.
		tl.Start, woken.at = minTime(in.SignalAt, in.ResumedAt), in.ResumedAt
	}
	if tl.Start.IsZero() || in.RunningAt.Before(tl.Start) {
		tl.Notes = append(tl.Notes, "the wake's start is not known")
		return tl
	}
	tl.Total = in.RunningAt.Sub(tl.Start)
	points := []point{woken}
	scaled := point{name: napwakev1alpha1.WakeStepScaled, at: in.ScaledAt}
	if in.ScaledAt.IsZero() {
		scaled.why = "the operator wrote no scale it remembers (someone else scaled the target up, or the operator restarted mid-wake)"
	}
	points = append(points, scaled)
	pp := podPoints(in.Pod, in.ResumedAt)
	if !pp[0].at.IsZero() || !pp[1].at.IsZero() || !pp[2].at.IsZero() {
		tl.Pod = in.Pod.Name
	}
	points = append(points, pp...)
	points = append(points, point{name: napwakev1alpha1.WakeStepRunning, at: in.RunningAt})

	last := tl.Start
	for _, p := range points {
		if p.at.IsZero() {
			tl.Notes = append(tl.Notes, string(p.name)+": "+p.why)
			continue
		}
		d := p.at.Sub(last)
		if d <= -rounding || p.at.After(in.RunningAt) {
			tl.Notes = append(tl.Notes, string(p.name)+": its time is out of order with the steps around it (clocks differ)")
			continue
		}
		if d < 0 {
			// Rounded down past the step before: the same moment.
			d, p.at = 0, last
		}
		tl.Steps = append(tl.Steps, Step{Name: p.name, Took: d})
		last = p.at
		if tl.Slowest < 0 || d > tl.Steps[tl.Slowest].Took {
			tl.Slowest = len(tl.Steps) - 1
		}
	}
	if tl.Slowest >= 0 {
		tl.Advice = advice(tl.Steps[tl.Slowest], in.Pod)
	}
	return tl
}

// podPoints are the ends of the scheduled, started and ready steps, read
// from pod: each condition's lastTransitionTime and the containers'
// startedAt. A pod created a second or more before the wake began is not
// the wake's, so its times say nothing of it.
func podPoints(pod *corev1.Pod, resumedAt time.Time) []point {
	names := []napwakev1alpha1.WakeStepName{napwakev1alpha1.WakeStepScheduled, napwakev1alpha1.WakeStepStarted, napwakev1alpha1.WakeStepReady}
	out := make([]point, len(names))
	for i, n := range names {
		out[i].name = n
	}
	switch {
	case pod == nil:
		return unknown(out, "no Ready pod of this wake was seen")
	case pod.CreationTimestamp.Time.Before(resumedAt.Add(-rounding)):
		return unknown(out, "the Ready pod is older than the wake (a pause called off)")
	}
	out[0].at, out[0].why = conditionTrue(pod, corev1.PodScheduled), "the pod has no PodScheduled time"
	out[1].at, out[1].why = containersStarted(pod), "the pod's containers have no start time"
	out[2].at, out[2].why = conditionTrue(pod, corev1.PodReady), "the pod has no Ready time"
	return out
}

func unknown(ps []point, why string) []point {
	for i := range ps {
		ps[i].why = why
	}
	return ps
}

// conditionTrue is when pod's condition typ last turned True; zero if it
// is not True.
func conditionTrue(pod *corev1.Pod, typ corev1.PodConditionType) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// containersStarted is when the last of pod's containers started running;
// zero unless every one has.
func containersStarted(pod *corev1.Pod) time.Time {
	var last time.Time
	if len(pod.Status.ContainerStatuses) == 0 {
		return last
	}
	for _, cs := range pod.Status.ContainerStatuses {
		r := cs.State.Running
		if r == nil || r.StartedAt.IsZero() {
			return time.Time{}
		}
		if r.StartedAt.After(last) {
			last = r.StartedAt.Time
		}
	}
	return last
}

// advice says how the slowest step s could be shortened, reading pod's
// readiness probes for the ready step.
func advice(s Step, pod *corev1.Pod) string {
	took := Seconds(s.Took)
	switch s.Name {
	case napwakev1alpha1.WakeStepWoken:
		return "the operator wrote Resuming " + took + " after the waking signal: check the operator's reconcile backlog (napwake_operator_* and controller-runtime's workqueue metrics)"
	case napwakev1alpha1.WakeStepScaled:
		return "writing the target's scale took " + took + " after Resuming: check the API server's latency and the operator's client rate limits"
	case napwakev1alpha1.WakeStepScheduled:
		return "the pod waited " + took + " to be scheduled: look at its FailedScheduling events, the nodes' free room and the cluster autoscaler"
	case napwakev1alpha1.WakeStepStarted:
		return "the image pull and container start took " + took + " after scheduling: use a smaller image, imagePullPolicy IfNotPresent, or pre-pull it onto the nodes"
	case napwakev1alpha1.WakeStepReady:
		return readyAdvice(took, pod)
	default:
		return "the operator saw the Ready pod " + took + " after it turned Ready: check the Deployment controller and the operator's reconcile backlog"
	}
}

func readyAdvice(took string, pod *corev1.Pod) string {
	var probes []string
	if pod != nil {
		for _, c := range pod.Spec.Containers {
			if p := c.ReadinessProbe; p != nil {
				probes = append(probes, fmt.Sprintf("%s: initialDelaySeconds %d, periodSeconds %d", c.Name, p.InitialDelaySeconds, periodOf(p)))
			}
		}
	}
	if len(probes) == 0 {
		return "the pod turned Ready " + took + " after its containers started: the app's start-up (or a startup probe) takes that long"
	}
	return "your readiness probe's first success came " + took + " after the container started: lower `initialDelaySeconds` or `periodSeconds` (" +
		strings.Join(probes, "; ") + ")"
}

// periodOf is p's periodSeconds, 10 when unset as the API defaults it.
func periodOf(p *corev1.Probe) int32 {
	if p.PeriodSeconds == 0 {
		return 10
	}
	return p.PeriodSeconds
}

// Seconds writes d as seconds with one decimal: "1.8 s".
func Seconds(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// Status is tl as status.lastWake.
func (tl Timeline) Status() *napwakev1alpha1.LastWakeStatus {
	out := &napwakev1alpha1.LastWakeStatus{Source: tl.Source, TotalMilliseconds: tl.Total.Milliseconds(), Advice: clip(tl.Advice)}
	out.StartedAt.Time = tl.Start
	out.Pod = tl.Pod
	for _, s := range tl.Steps {
		out.Steps = append(out.Steps, napwakev1alpha1.WakeStep{Name: s.Name, Milliseconds: s.Took.Milliseconds()})
	}
	if tl.Slowest >= 0 {
		out.Slowest = tl.Steps[tl.Slowest].Name
	}
	out.Note = clip(strings.Join(tl.Notes, "; "))
	return out
}

// Summary is w in a few words for the Running event, so the events of
// recent wakes keep their totals and slowest steps after status.lastWake
// moves on: "5.3 s after the request signal; slowest: ready, 3.0 s". It is
// "" for a wake not complete.
func Summary(w *napwakev1alpha1.LastWakeStatus) string {
	if w == nil || w.TotalMilliseconds == 0 {
		return ""
	}
	out := Seconds(time.Duration(w.TotalMilliseconds)*time.Millisecond) + " after the " + w.Source + " signal"
	for _, s := range w.Steps {
		if s.Name == w.Slowest {
			out += "; slowest: " + string(s.Name) + ", " + Seconds(time.Duration(s.Milliseconds)*time.Millisecond)
		}
	}
	return out
}

// clip keeps s within the 512 bytes the API allows.
func clip(s string) string {
	if len(s) <= 512 {
		return s
	}
	return strings.ToValidUTF8(s[:509], "") + "..."
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
