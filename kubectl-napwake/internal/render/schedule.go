package render

import (
	"fmt"
	"io"
	"strings"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// ScheduleSummary says where mw's schedule stands, as the operator last
// wrote it in status.schedule: "awake until 2026-10-23T19:00:00Z (in 1h),
// next from ...", or "next window ... to ...". It is "" without a
// schedule, and says so when the operator could not read it.
func ScheduleSummary(mw *napwakev1alpha1.ManagedWorkload, o Options) string {
	sp, st := mw.Spec.Schedule, mw.Status.Schedule
	if sp == nil {
		return ""
	}
	windows := make([]string, len(sp.Awake))
	for i, w := range sp.Awake {
		windows[i] = clean(string(w))
	}
	zone := sp.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	what := strings.Join(windows, ", ") + " " + clean(zone)
	switch {
	case invalidSchedule(mw):
		return what + ": not followed, the operator cannot read it (see Needs attention)"
	case st == nil:
		return what + ": not yet read by the operator"
	case st.Awake && st.End != nil:
		s := what + ": in a window until " + stamp(st.End.Time) + " (in " + until(o.Now, st.End.Time) + ")"
		if st.NextStart != nil {
			s += ", next from " + stamp(st.NextStart.Time)
		}
		return s
	case st.NextStart != nil && st.End != nil:
		return what + ": next window " + stamp(st.NextStart.Time) + " to " + stamp(st.End.Time) + " (in " + until(o.Now, st.NextStart.Time) + ")"
	}
	return what + ": no window in the next two weeks"
}

// OverrideSummary names the override annotation in force and its end, ""
// for none: "pause-until 2026-10-23T20:00:00Z (in 2h)".
func OverrideSummary(mw *napwakev1alpha1.ManagedWorkload, o Options) string {
	st := mw.Status.Schedule
	if st == nil || st.Override == "" || st.OverrideUntil == nil {
		return ""
	}
	return clean(st.Override) + " " + stamp(st.OverrideUntil.Time) + " (in " + until(o.Now, st.OverrideUntil.Time) + ")"
}

func invalidSchedule(mw *napwakev1alpha1.ManagedWorkload) bool {
	for _, c := range mw.Status.Conditions {
		if c.Type == napwakev1alpha1.ConditionSchedule && c.Reason == napwakev1alpha1.ReasonInvalidSchedule {
			return true
		}
	}
	return false
}

// statusSchedules writes status's "Schedules and overrides" list: a row
// per workload with either.
func statusSchedules(w io.Writer, mws []napwakev1alpha1.ManagedWorkload, o Options) {
	t := table{indent: "  "}
	for i := range mws {
		parts := []string{}
		for _, s := range []string{OverrideSummary(&mws[i], o), ScheduleSummary(&mws[i], o)} {
			if s != "" {
				parts = append(parts, s)
			}
		}
		if len(parts) > 0 {
			t.add(txt(ref(&mws[i], o)), txt(strings.Join(parts, "; ")))
		}
	}
	if len(t.rows) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Schedules and overrides:")
		t.write(w, o)
	}
}
