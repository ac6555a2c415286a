package decide

import (
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// newestActivity is the latest activity signal that fired, at or before
// now+MaxClockSkew; source is empty when none did.
func newestActivity(in Input, now time.Time) signal {
	var out signal
	for _, c := range []struct{ key, source string }{
		{napwakev1alpha1.AnnotationLastActivity, napwakev1alpha1.SourceAnnotation},
		{napwakev1alpha1.AnnotationWakeRequested, napwakev1alpha1.SourceWakeRequested},
		{napwakev1alpha1.AnnotationLastRequest, napwakev1alpha1.SourceRequest},
	} {
		if at, ok := parseTime(in.Annotations[c.key], now); ok && at.After(out.at) {
			out = signal{at: at, source: c.source}
		}
	}
	if d := in.Dependents; asleep(in.State.Phase) && d.WokeAt.Truncate(time.Second).After(out.at) && !d.WokeAt.After(now.Add(MaxClockSkew)) {
		out = signal{at: d.WokeAt.Truncate(time.Second), source: napwakev1alpha1.SourceDependent, by: d.WokenBy}
	}
	switch {
	case !now.After(out.at):
	case in.QueryActive: // named in the spec: it wins over the default signal
		out = signal{at: now, source: napwakev1alpha1.SourcePrometheus}
	case in.Busy:
		out = signal{at: now, source: napwakev1alpha1.SourceUsage}
	}
	return out
}

// asleep says a dependent's wake is read in this phase: Paused or Pausing.
func asleep(p napwakev1alpha1.Phase) bool {
	return p == napwakev1alpha1.PhasePaused || p == napwakev1alpha1.PhasePausing
}

// parseTime reads an acting annotation's RFC 3339 time, truncated to the
// second; ok is false when it is absent, unreadable, or more than
// MaxClockSkew after now.
func parseTime(v string, now time.Time) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false
	}
	t = t.Truncate(time.Second)
	if t.After(now.Add(MaxClockSkew)) {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// MergeAnnotations returns the acting annotations of the ManagedWorkload and
// its target together; where both carry a time, the later one wins.
// napwake.dev/last-request counts only on the ManagedWorkload, where the
// admission policies let only the doorman set it: anyone who may annotate a
// Deployment could otherwise forge a request's wake.
func MergeAnnotations(mw, target map[string]string) map[string]string {
	out := map[string]string{}
	if v := mw[napwakev1alpha1.AnnotationLastRequest]; v != "" {
		out[napwakev1alpha1.AnnotationLastRequest] = v
	}
	for _, key := range []string{
		napwakev1alpha1.AnnotationLastActivity, napwakev1alpha1.AnnotationWakeRequested, napwakev1alpha1.AnnotationPauseRequested,
		napwakev1alpha1.AnnotationKeepAwakeUntil, napwakev1alpha1.AnnotationPauseUntil,
	} {
		a, b := mw[key], target[key]
		ta, okA := parseTime(a, farFuture)
		tb, okB := parseTime(b, farFuture)
		switch {
		case okA && okB && tb.After(ta), !okA && okB:
			out[key] = b
		case a != "":
			out[key] = a
		}
	}
	return out
}

var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
