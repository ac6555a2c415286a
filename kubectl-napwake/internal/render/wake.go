package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// wakeSteps says what each step of status.lastWake runs between
// (docs/pause.md#where-a-wakes-time-went).
var wakeSteps = map[napwakev1alpha1.WakeStepName]string{
	napwakev1alpha1.WakeStepWoken:     "signal → Resuming written",
	napwakev1alpha1.WakeStepScaled:    "Resuming → scale written",
	napwakev1alpha1.WakeStepScheduled: "scale written → pod scheduled",
	napwakev1alpha1.WakeStepStarted:   "scheduled → image ready and containers started",
	napwakev1alpha1.WakeStepReady:     "containers started → pod Ready",
	napwakev1alpha1.WakeStepRunning:   "pod Ready → seen, Running",
}

// barWidth is the widest step's bar: a glance at where the time went.
const barWidth = 20

// LastWakeTotal is status's LAST WAKE column: the last wake's total, "under
// way" while it is, "-" when there was none.
func LastWakeTotal(mw *napwakev1alpha1.ManagedWorkload) string {
	w := mw.Status.LastWake
	switch {
	case w == nil:
		return "-"
	case w.TotalMilliseconds == 0:
		return "under way"
	default:
		return seconds(w.TotalMilliseconds)
	}
}

// describeLastWake renders the last wake's timeline: what woke it, each
// step with a bar, the slowest flagged with its advice, what the kubelet
// said of the wake pod's image (its Pulled events, while the cluster keeps
// them), and the steps that could not be told.
func describeLastWake(w io.Writer, mw *napwakev1alpha1.ManagedWorkload, events []corev1.Event, o Options) {
	lw := mw.Status.LastWake
	if lw == nil {
		return
	}
	head := fmt.Sprintf("woken by %s at %s (%s ago)", orDash(lw.Source), stamp(lw.StartedAt.Time), since(o.Now, &lw.StartedAt.Time))
	if lw.TotalMilliseconds == 0 {
		fmt.Fprintln(w, "Last wake: "+clean(head)+", under way")
		return
	}
	fmt.Fprintln(w, "Last wake: "+clean(head)+", "+seconds(lw.TotalMilliseconds)+" to Running")
	var longest int64
	for _, s := range lw.Steps {
		longest = max(longest, s.Milliseconds)
	}
	t := table{indent: "  "}
	t.add(txt("STEP"), txt("TOOK"), txt(""), txt("FROM → TO"))
	for _, s := range lw.Steps {
		name := txt(string(s.Name))
		if s.Name == lw.Slowest {
			name = cell{string(s.Name) + " (slowest)", yellow}
		}
		t.add(name, txt(seconds(s.Milliseconds)), txt(bar(s.Milliseconds, longest)), txt(orDash(wakeSteps[s.Name])))
	}
	t.write(w, o)
	if lw.Advice != "" {
		fmt.Fprintf(w, "  %s %s\n", o.paint(yellow, "Slowest:"), oneLine(lw.Advice))
	}
	for _, msg := range imagePulled(lw.Pod, mw.Namespace, events) {
		fmt.Fprintf(w, "  Image: %s\n", msg)
	}
	if lw.Note != "" {
		fmt.Fprintf(w, "  Not told: %s\n", oneLine(lw.Note))
	}
}

// imagePulled is what the kubelet said of pod's images as it started
// them (events with reason Pulled: "Successfully pulled image … in 1.2s"
// or "already present on machine"), each message once, in the order seen.
func imagePulled(pod, namespace string, events []corev1.Event) []string {
	if pod == "" {
		return nil
	}
	var out []string
	for _, e := range events {
		o := e.InvolvedObject
		if o.Kind != "Pod" || o.Name != pod || o.Namespace != namespace || e.Reason != "Pulled" {
			continue
		}
		if msg := oneLine(e.Message); !slices.Contains(out, msg) {
			out = append(out, msg)
		}
	}
	return out
}

// bar is ms as a share of barWidth blocks against longest; at least one
// block for any time at all.
func bar(ms, longest int64) string {
	if longest <= 0 || ms <= 0 {
		return ""
	}
	return strings.Repeat("█", max(1, int(ms*barWidth/longest)))
}

// seconds writes ms as seconds with one decimal, as the operator's advice
// does: "1.8 s".
func seconds(ms int64) string {
	return fmt.Sprintf("%.1f s", (time.Duration(ms) * time.Millisecond).Seconds())
}
