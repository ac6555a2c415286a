package quiesce

import (
	"maps"
	"testing"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// apply writes an Action's annotations as the merge patch would.
func apply(annotations map[string]string, a Action) map[string]string {
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, a.Set)
	for _, k := range a.Remove {
		delete(out, k)
	}
	return out
}

// FuzzScaledObject: whatever a user writes in the two annotations, what
// Napwake's write leaves needs no second write (so the operator never
// fights itself), an owner's paused-replicas (no record) is never
// changed nor removed, and nothing is written to a running workload's
// ScaledObject that Napwake did not record.
func FuzzScaledObject(f *testing.F) {
	f.Add(true, "", false, "", false)
	f.Add(true, "0", true, "true", true)
	f.Add(true, "3", true, "true", true)
	f.Add(false, "0", true, "true", true)
	f.Add(true, "2", true, "", false)
	f.Add(false, "2", true, "TRUE", true)
	f.Fuzz(func(t *testing.T, paused bool, value string, hasValue bool, rec string, hasRec bool) {
		in := map[string]string{}
		if hasValue {
			in[keda] = value
		}
		if hasRec {
			in[record] = rec
		}
		ours := rec == "true" && hasRec
		res := ScaledObject(paused, in)
		out := apply(in, res.Action)
		if again := ScaledObject(paused, out); !again.Empty() || again.Reset {
			t.Fatalf("after %v → %v, a second look writes %+v", in, out, again)
		}
		if !ours && hasValue && out[keda] != value {
			t.Fatalf("an owner's paused-replicas %q became %q", value, out[keda])
		}
		if !ours && !paused && !res.Empty() {
			t.Fatalf("a running workload's ScaledObject %v without Napwake's record got %+v", in, res.Action)
		}
		if paused && res.Held != (out[keda] == "0") {
			t.Fatalf("Held %v with paused-replicas %q after the write", res.Held, out[keda])
		}
		if !paused && ours && (out[keda] != "" || out[record] != "") {
			t.Fatalf("a wake left %v", out)
		}
	})
}

// FuzzCronJob: one write is enough, a CronJob its owner suspended is never
// resumed, and one labelled napwake.dev/ignore=true without Napwake's record
// is never written.
func FuzzCronJob(f *testing.F) {
	f.Add(true, false, "", false, "")
	f.Add(false, true, "true", true, "")
	f.Add(true, true, "", false, "true")
	f.Add(false, true, "yes", true, "false")
	f.Fuzz(func(t *testing.T, allPaused, suspend bool, rec string, hasRec bool, ignore string) {
		cj := CronJobState{Suspend: suspend, Annotations: map[string]string{}, Labels: map[string]string{napwakev1alpha1.LabelIgnore: ignore}}
		if hasRec {
			cj.Annotations[susp] = rec
		}
		ours := hasRec && rec == "true"
		res := CronJob(allPaused, cj)
		next := CronJobState{Suspend: suspend, Annotations: apply(cj.Annotations, res.Action), Labels: cj.Labels}
		if res.Suspend != nil {
			next.Suspend = *res.Suspend
		}
		if again := CronJob(allPaused, next); !again.Empty() {
			t.Fatalf("after %+v → %+v, a second look writes %+v", cj, next, again)
		}
		if suspend && !ours && !next.Suspend {
			t.Fatalf("an owner's suspended CronJob %+v was resumed", cj)
		}
		if ignore == "true" && !ours && !res.Empty() {
			t.Fatalf("an ignored CronJob %+v got %+v", cj, res.Action)
		}
	})
}
