package render

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Problem is one entry of the "Needs attention" list.
type Problem struct {
	// Reason is the condition or event reason, such as ServedByOtherPods.
	Reason string
	// Message says what is wrong, as the operator wrote it.
	Message string
}

// notRoutingProblems are WakeOnRequest=False reasons that need nobody's
// attention: the workload is awake, or the doorman is off on purpose.
var notRoutingProblems = []string{napwakev1alpha1.ReasonNotPaused, napwakev1alpha1.ReasonDoormanDisabled, napwakev1alpha1.ReasonDoormanRouted}

// recentEvents is how far back an InvalidSetting event still needs
// attention: clusters keep events an hour by default, some far longer, and a
// setting fixed yesterday should not be listed today.
const recentEvents = 24 * time.Hour

// Problems lists what needs a person's attention on mw at now: a
// WakeOnRequest=False routing reason, a routing problem carried from the last
// pause (message starting "at its last pause: "), a missing target, a
// False GitOps, Schedule, Autoscalers (a ScaledObject that may scale the
// paused target) or CronJobs (a CronJob Napwake could not write), and the
// InvalidSetting events of the last day among events that concern mw or its
// target. Duplicated events (the same message) are listed once.
func Problems(mw *napwakev1alpha1.ManagedWorkload, events []corev1.Event, now time.Time) []Problem {
	var out []Problem
	if c := meta.FindStatusCondition(mw.Status.Conditions, napwakev1alpha1.ConditionWakeOnRequest); c != nil && c.Status == metav1.ConditionFalse {
		if strings.HasPrefix(c.Message, napwakev1alpha1.CarriedOverPrefix) || !slices.Contains(notRoutingProblems, c.Reason) {
			out = append(out, Problem{Reason: c.Reason, Message: c.Message})
		}
	}
	for _, typ := range []string{napwakev1alpha1.ConditionTargetAvailable, napwakev1alpha1.ConditionGitOps, napwakev1alpha1.ConditionSchedule,
		napwakev1alpha1.ConditionAutoscalers, napwakev1alpha1.ConditionCronJobs} {
		if c := meta.FindStatusCondition(mw.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionFalse {
			out = append(out, Problem{Reason: c.Reason, Message: c.Message})
		}
	}
	seen := map[string]bool{}
	for _, e := range eventsFor(mw, events) {
		if e.Reason != napwakev1alpha1.EventInvalidSetting || seen[e.Message] || now.Sub(eventTime(e)) > recentEvents {
			continue
		}
		seen[e.Message] = true
		out = append(out, Problem{Reason: e.Reason, Message: e.Message})
	}
	return out
}

// eventsFor returns the events about mw itself or its target workload (the
// operator reports settings read from a labelled workload's annotations on
// that workload), newest first.
func eventsFor(mw *napwakev1alpha1.ManagedWorkload, events []corev1.Event) []corev1.Event {
	var out []corev1.Event
	for _, e := range events {
		obj := e.InvolvedObject
		if obj.Namespace != mw.Namespace {
			continue
		}
		if (obj.Kind == "ManagedWorkload" && obj.Name == mw.Name) ||
			(obj.Kind == string(mw.Spec.TargetRef.Kind) && obj.Name == mw.Spec.TargetRef.Name) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b corev1.Event) int { return eventTime(b).Compare(eventTime(a)) })
	return out
}

// eventTime is when an event was last seen, whichever API wrote it.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// TurnedAwayThisPause returns how many requests the doorman turned away in
// mw's current pause; zero when it is not paused or the count is for an
// earlier pause.
func TurnedAwayThisPause(mw *napwakev1alpha1.ManagedWorkload) int64 {
	s := mw.Status
	if s.Pause == nil || s.TurnedAway == nil || s.Phase == napwakev1alpha1.PhaseRunning {
		return 0
	}
	if !s.TurnedAway.PausedAt.Equal(&s.Pause.StartedAt) {
		return 0
	}
	return s.TurnedAway.Requests
}

// ReplicaHoursPaused sums, over the workloads in phase Paused, the replicas
// each keeps times how long it has been paused, in hours.
func ReplicaHoursPaused(mws []napwakev1alpha1.ManagedWorkload, now time.Time) (hours float64, workloads int, replicas int32) {
	for i := range mws {
		s := mws[i].Status
		if s.Phase != napwakev1alpha1.PhasePaused || s.Pause == nil {
			continue
		}
		workloads++
		replicas += s.Pause.Replicas
		if d := now.Sub(s.Pause.StartedAt.Time); d > 0 {
			hours += float64(s.Pause.Replicas) * d.Hours()
		}
	}
	return hours, workloads, replicas
}

// Status renders `kubectl napwake status`: one row per workload, each
// environment together (a workload, then its dependencies under it, indented,
// with who keeps them awake), then the workloads needing attention, those that turned requests away this pause,
// and the replica-hours paused. namespace names the namespace listed, for the
// empty message; it is ignored with AllNamespaces.
func Status(w io.Writer, mws []napwakev1alpha1.ManagedWorkload, events []corev1.Event, namespace string, o Options) {
	if len(mws) == 0 {
		if o.NoHeaders {
			return
		}
		if o.AllNamespaces {
			fmt.Fprintln(w, "No ManagedWorkloads found.")
		} else {
			fmt.Fprintf(w, "No ManagedWorkloads found in namespace %s.\n", namespace)
		}
		return
	}
	t := table{}
	header := []string{"NAME", "PHASE", "TARGET", "REPLICAS KEPT", "IDLE/PAUSED FOR", "LAST WOKEN BY", "RESUMED", "LAST WAKE"}
	if o.Wide {
		header = append(header, "WAKE", "PAUSES IN", "ROUTES", "TURNED AWAY")
	}
	if o.AllNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	var hc []cell
	for _, h := range header {
		hc = append(hc, txt(h))
	}
	t.add(hc...)
	order, depth := environments(mws)
	for _, i := range order {
		t.add(statusRow(&mws[i], depth[i], o)...)
	}
	if o.NoHeaders {
		t.rows = t.rows[1:]
	}
	t.write(w, o)
	if o.NoHeaders {
		return
	}

	var attention table
	attention.indent = "  "
	for i := range mws {
		for _, p := range Problems(&mws[i], events, o.Now) {
			attention.add(txt(ref(&mws[i], o)), cell{clean(p.Reason), yellow}, txt(oneLine(p.Message)))
		}
	}
	if len(attention.rows) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, o.paint(yellow, "Needs attention:"))
		attention.write(w, o)
	}

	var turned table
	turned.indent = "  "
	for i := range mws {
		if n := TurnedAwayThisPause(&mws[i]); n > 0 {
			turned.add(txt(ref(&mws[i], o)), txt(plural(n, "request")))
		}
	}
	if len(turned.rows) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Turned requests away this pause (something automated may be calling them):")
		turned.write(w, o)
	}

	statusSchedules(w, mws, o)

	hours, n, replicas := ReplicaHoursPaused(mws, o.Now)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Replica-hours paused: %.1f (%s paused now, %s kept)\n",
		hours, plural(int64(n), "workload"), plural(int64(replicas), "replica"))
}

func statusRow(mw *napwakev1alpha1.ManagedWorkload, depth int, o Options) []cell {
	s := mw.Status
	kept, forDur := "-", "-"
	switch s.Phase {
	case napwakev1alpha1.PhaseRunning:
		forDur = since(o.Now, timeOf(s.LastActivity))
	case napwakev1alpha1.PhasePausing, napwakev1alpha1.PhasePaused:
		if s.Pause != nil {
			forDur = since(o.Now, &s.Pause.StartedAt.Time)
		}
	}
	if s.Phase != napwakev1alpha1.PhaseRunning && s.Pause != nil {
		kept = strconv.Itoa(int(s.Pause.Replicas))
	}
	resumed := "-"
	if s.ResumedAt != nil {
		resumed = since(o.Now, &s.ResumedAt.Time) + " ago"
	}
	name := mw.Name
	if depth > 0 {
		name = strings.Repeat("  ", depth-1) + "└ " + name
	}
	if held := HeldBy(mw); held != "" {
		forDur += " (" + held + ")"
	}
	row := []cell{
		txt(name),
		phaseCell(s.Phase),
		txt(mw.Spec.TargetRef.String()),
		txt(kept),
		txt(forDur),
		txt(orDash(s.LastActivitySource)),
		txt(resumed),
		txt(LastWakeTotal(mw)),
	}
	if o.Wide {
		pausesIn := "-"
		if s.Phase == napwakev1alpha1.PhaseRunning && s.PauseAt != nil {
			pausesIn = until(o.Now, s.PauseAt.Time)
		}
		routes := 0
		if s.Doorman != nil {
			routes = len(s.Doorman.Routes)
		}
		row = append(row,
			txt(orDash(string(mw.Spec.Wake.Mode))),
			txt(pausesIn),
			txt(strconv.Itoa(routes)),
			txt(strconv.FormatInt(TurnedAwayThisPause(mw), 10)))
	}
	if o.AllNamespaces {
		row = append([]cell{txt(mw.Namespace)}, row...)
	}
	return row
}

// phaseCell colours a phase: green running, blue paused, yellow in between.
func phaseCell(p napwakev1alpha1.Phase) cell {
	switch p {
	case napwakev1alpha1.PhaseRunning:
		return cell{string(p), green}
	case napwakev1alpha1.PhasePaused:
		return cell{string(p), blue}
	case "":
		return txt("-")
	default:
		return cell{clean(string(p)), yellow}
	}
}

// ref names mw as the user typed it: with its namespace when listing all.
func ref(mw *napwakev1alpha1.ManagedWorkload, o Options) string {
	if o.AllNamespaces {
		return mw.Namespace + "/" + mw.Name
	}
	return mw.Name
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}

// oneLine folds a multi-line message so a table row stays one line, with
// control characters blanked (see clean).
func oneLine(s string) string { return strings.Join(strings.Fields(clean(s)), " ") }
