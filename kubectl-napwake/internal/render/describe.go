package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// maxEvents bounds the events describe shows: the newest ten tell the recent
// story; `kubectl get events` has the rest.
const maxEvents = 10

// Describe renders `kubectl napwake describe`: the workload's clock (last
// activity, its source, when it pauses or who keeps it awake), the last
// wake's timeline, its routes
// and doorman ports, why it is not routed, its dependencies and its recent
// events. It knows nothing of the dependencies' own state; DescribeWith does.
func Describe(w io.Writer, mw *napwakev1alpha1.ManagedWorkload, events []corev1.Event, o Options) {
	DescribeWith(w, mw, events, Around{}, o)
}

// Around is what describe reads around a workload besides its events.
type Around struct {
	// Dependencies are the dependencies' ManagedWorkloads, keyed
	// "namespace/name" (nil for one that does not exist), so each edge
	// shows its dependency's phase.
	Dependencies map[string]*napwakev1alpha1.ManagedWorkload
	// Autoscalers scale the target; shown when there are any.
	Autoscalers []Autoscaler
}

// DescribeWith is Describe with what is around the workload.
func DescribeWith(w io.Writer, mw *napwakev1alpha1.ManagedWorkload, events []corev1.Event, around Around, o Options) {
	s := mw.Status
	deps := around.Dependencies
	kv := table{}
	kv.add(txt("Name:"), txt(mw.Name))
	kv.add(txt("Namespace:"), txt(mw.Namespace))
	kv.add(txt("Target:"), txt(describeTarget(mw.Spec.TargetRef)))
	if len(around.Autoscalers) > 0 {
		kv.add(txt("Autoscalers:"), txt(autoscalersLine(around.Autoscalers)))
	}
	kv.add(txt("Phase:"), phaseCell(s.Phase))
	if s.Pause != nil {
		label := "Pause:"
		if s.Phase == napwakev1alpha1.PhaseRunning {
			label = "Last pause:"
		}
		kv.add(txt(label), txt(fmt.Sprintf("%s, since %s (%s ago), %s kept",
			orDash(string(s.Pause.Reason)), stamp(s.Pause.StartedAt.Time), since(o.Now, &s.Pause.StartedAt.Time),
			plural(int64(s.Pause.Replicas), "replica"))))
	}
	kv.add(txt("Wake:"), txt(wakeSummary(mw.Spec.Wake)))
	kv.write(w, o)

	fmt.Fprintln(w, "Clock:")
	clock := table{indent: "  "}
	clock.add(txt("Last activity:"), txt(agoStamp(o, s.LastActivity)))
	clock.add(txt("Source:"), txt(orDash(s.LastActivitySource)))
	idle := "operator default"
	if mw.Spec.IdleAfter != nil {
		idle = mw.Spec.IdleAfter.Duration.String()
	}
	clock.add(txt("Idle after:"), txt(idle))
	clock.add(txt("Idle CPU level:"), txt(idleLevel(s.Usage)))
	pauseAt := "-"
	switch {
	case s.Phase == napwakev1alpha1.PhaseRunning && s.PauseAt != nil:
		pauseAt = stamp(s.PauseAt.Time) + " (in " + until(o.Now, s.PauseAt.Time) + ")"
	case s.Phase == napwakev1alpha1.PhaseRunning && HeldBy(mw) != "":
		pauseAt = "not while " + HeldBy(mw)
	case s.Phase != napwakev1alpha1.PhaseRunning && s.Phase != "":
		pauseAt = "not running"
	}
	clock.add(txt("Pauses at:"), txt(pauseAt))
	if sc := ScheduleSummary(mw, o); sc != "" {
		clock.add(txt("Schedule:"), txt(sc))
	}
	if ov := OverrideSummary(mw, o); ov != "" {
		clock.add(txt("Override:"), txt(ov))
	}
	clock.add(txt("Last resumed:"), txt(agoStamp(o, s.ResumedAt)))
	clock.write(w, o)
	describeLastWake(w, mw, events, o)

	fmt.Fprintln(w, "Routes:")
	var routes []napwakev1alpha1.Route
	if s.Doorman != nil {
		routes = s.Doorman.Routes
	}
	if len(routes) == 0 {
		fmt.Fprintln(w, "  none (the doorman answers for a workload only while it is paused)")
	} else {
		rt := table{indent: "  "}
		rt.add(txt("SERVICE"), txt("PORT"), txt("DOORMAN PORT"), txt("IP FAMILIES"), txt("FORWARDED"))
		for _, r := range routes {
			port := strconv.Itoa(int(r.Port))
			if r.PortName != "" {
				port = r.PortName + "/" + port
			}
			fams := make([]string, 0, len(r.IPFamilies))
			for _, f := range r.IPFamilies {
				fams = append(fams, string(f))
			}
			rt.add(txt(r.Service), txt(port), txt(strconv.Itoa(int(r.DoormanPort))), txt(orDash(strings.Join(fams, ","))), txt(yesNo(r.Forwarded)))
		}
		rt.write(w, o)
	}
	if c := meta.FindStatusCondition(s.Conditions, napwakev1alpha1.ConditionWakeOnRequest); c != nil && c.Status != metav1.ConditionTrue {
		fmt.Fprintf(w, "Why not routed:\n  %s: %s\n", o.paint(yellow, clean(c.Reason)), oneLine(c.Message))
	}
	if ps := Problems(mw, events, o.Now); len(ps) > 0 {
		fmt.Fprintln(w, o.paint(yellow, "Needs attention:"))
		pt := table{indent: "  "}
		for _, p := range ps {
			pt.add(cell{clean(p.Reason), yellow}, txt(oneLine(p.Message)))
		}
		pt.write(w, o)
	}
	if n := TurnedAwayThisPause(mw); n > 0 {
		fmt.Fprintf(w, "Turned away this pause: %s\n", plural(n, "request"))
	}

	describeDependencies(w, mw, deps, o)
	describeConditions(w, s.Conditions, o)
	describeEvents(w, eventsFor(mw, events), o)
}

// idleLevel describes the default signal's learned idle level.
func idleLevel(u *napwakev1alpha1.UsageStatus) string {
	if u == nil {
		return "not learned yet (from CPU usage through metrics.k8s.io, while nobody calls it)"
	}
	hours := 0
	for _, l := range u.HourlyLows {
		if l >= 0 {
			hours++
		}
	}
	return fmt.Sprintf("%dm, busy from %dm (learned over %s of the last day)", u.IdleMilliCPU, u.BusyAboveMilliCPU, plural(int64(hours), "hour"))
}

func describeConditions(w io.Writer, conds []metav1.Condition, o Options) {
	fmt.Fprintln(w, "Conditions:")
	if len(conds) == 0 {
		fmt.Fprintln(w, "  none yet")
		return
	}
	ct := table{indent: "  "}
	ct.add(txt("TYPE"), txt("STATUS"), txt("REASON"), txt("AGE"), txt("MESSAGE"))
	for _, c := range conds {
		st := txt(string(c.Status))
		if c.Status == metav1.ConditionFalse {
			st.c = yellow
		}
		ct.add(txt(c.Type), st, txt(c.Reason), txt(since(o.Now, &c.LastTransitionTime.Time)), txt(oneLine(c.Message)))
	}
	ct.write(w, o)
}

func describeEvents(w io.Writer, events []corev1.Event, o Options) {
	fmt.Fprintln(w, "Events:")
	if len(events) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	events = events[:min(len(events), maxEvents)]
	et := table{indent: "  "}
	et.add(txt("LAST SEEN"), txt("TYPE"), txt("REASON"), txt("OBJECT"), txt("MESSAGE"))
	for _, e := range events {
		t := eventTime(e)
		typ := txt(e.Type)
		if e.Type == corev1.EventTypeWarning {
			typ.c = yellow
		}
		et.add(txt(since(o.Now, &t)), typ, txt(e.Reason), txt(e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name), txt(oneLine(e.Message)))
	}
	et.write(w, o)
}

func wakeSummary(ws napwakev1alpha1.WakeSpec) string {
	parts := []string{orDash(string(ws.Mode))}
	if ws.Page != nil {
		parts = append(parts, "page "+onOff(*ws.Page))
	}
	if ws.MaxWait != nil {
		parts = append(parts, "max wait "+ws.MaxWait.Duration.String())
	}
	return strings.Join(parts, ", ")
}

func agoStamp(o Options, t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(t.Time) + " (" + since(o.Now, &t.Time) + " ago)"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// describeTarget is "Deployment/api", or for a kind other than apps/v1's
// "Rollout/web (argoproj.io/v1alpha1)".
func describeTarget(ref napwakev1alpha1.TargetRef) string {
	s := string(ref.Kind) + "/" + ref.Name
	if !ref.IsApps() && ref.APIVersion != "" {
		s += " (" + ref.APIVersion + ")"
	}
	return s
}
