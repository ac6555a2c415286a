// Package quiesce decides what Napwake writes on the objects around a
// paused workload, so that none of them undoes or outruns the pause:
//
//   - a KEDA ScaledObject that scales the workload gets KEDA's
//     autoscaling.keda.sh/paused-replicas: "0" from the moment the pause
//     begins (before the scale to 0), and napwake.dev/set-paused-replicas:
//     "true" to record it; a wake removes both. A paused-replicas Napwake
//     did not record is its owner's and is never touched.
//   - the CronJobs of an opted-in namespace are suspended while every
//     managed workload there is paused, recorded by napwake.dev/suspended:
//     "true", and resumed when any wakes. A CronJob already suspended
//     without the record stays as its owner left it; one labelled
//     napwake.dev/ignore=true is left alone.
//
// How to use it: for each object, the caller reads its state, asks
// ScaledObject or CronJob for the Action, writes the Action's changes (a
// merge patch), and gathers what it did into AutoscalersCondition and
// CronJobsCondition for the ManagedWorkload's status.
//
// It is pure: it takes the objects' annotations, labels and suspend flag,
// and returns what to write. It reads no cluster and no clock.
package quiesce

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// Condition is a condition to set on a ManagedWorkload.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Action is what to write on one object. Empty means nothing.
type Action struct {
	// Set are annotations to set.
	Set map[string]string
	// Remove are annotations to remove.
	Remove []string
	// Suspend, for a CronJob, is the spec.suspend to write; nil for none.
	Suspend *bool
}

// Empty says the Action writes nothing.
func (a Action) Empty() bool { return len(a.Set) == 0 && len(a.Remove) == 0 && a.Suspend == nil }

// AnnotationPatch is the Action's annotations as a merge patch's
// metadata.annotations: a value to set, nil to remove.
func (a Action) AnnotationPatch() map[string]*string {
	if len(a.Set) == 0 && len(a.Remove) == 0 {
		return nil
	}
	out := make(map[string]*string, len(a.Set)+len(a.Remove))
	for k, v := range a.Set {
		out[k] = &v
	}
	for _, k := range a.Remove {
		out[k] = nil
	}
	return out
}

// pausedZero is the paused-replicas value Napwake writes.
const pausedZero = "0"

// recorded says Napwake's record annotation is on an object.
func recorded(annotations map[string]string, key string) bool {
	return annotations[key] == "true"
}

// ScaledObjectResult is what ScaledObject decided for one ScaledObject.
type ScaledObjectResult struct {
	Action
	// Reset: paused, Napwake's record is there, and its paused-replicas
	// was changed or removed; the Action sets it back.
	Reset bool
	// Held: once the Action is written, the ScaledObject holds the
	// workload at 0 (Napwake's annotation, or its owner's "0").
	Held bool
	// Owners is the owner's own paused-replicas, which Napwake leaves
	// alone; "" when there is none or it is Napwake's.
	Owners string
}

// ScaledObject decides the annotations of a ScaledObject that scales a
// workload, from whether the workload is paused (its pause has begun: phase
// Pausing or Paused) and the ScaledObject's annotations:
//
//   - paused, nothing set: set paused-replicas "0" and the record;
//   - paused, the record and "0": nothing;
//   - paused, the record and another value or none (someone changed or
//     removed it): set "0" again, Reset;
//   - paused, paused-replicas without the record: the owner's, untouched;
//     Held only when it is "0";
//   - awake, the record: remove both;
//   - awake, no record: nothing, whatever paused-replicas says.
func ScaledObject(paused bool, annotations map[string]string) ScaledObjectResult {
	value, has := annotations[napwakev1alpha1.AnnotationKEDAPausedReplicas]
	ours := recorded(annotations, napwakev1alpha1.AnnotationSetPausedReplicas)
	switch {
	case !paused && ours:
		return ScaledObjectResult{Action: Action{Remove: []string{
			napwakev1alpha1.AnnotationKEDAPausedReplicas, napwakev1alpha1.AnnotationSetPausedReplicas,
		}}}
	case !paused:
		return ScaledObjectResult{}
	case ours && has && value == pausedZero:
		return ScaledObjectResult{Held: true}
	case ours:
		return ScaledObjectResult{Action: Action{Set: map[string]string{napwakev1alpha1.AnnotationKEDAPausedReplicas: pausedZero}}, Reset: true, Held: true}
	case has:
		return ScaledObjectResult{Held: value == pausedZero, Owners: value}
	}
	return ScaledObjectResult{Action: Action{Set: map[string]string{
		napwakev1alpha1.AnnotationKEDAPausedReplicas: pausedZero,
		napwakev1alpha1.AnnotationSetPausedReplicas:  "true",
	}}, Held: true}
}

// CronJobState is what CronJob reads of one CronJob.
type CronJobState struct {
	Suspend     bool
	Annotations map[string]string
	Labels      map[string]string
}

// CronJobResult is what CronJob decided for one CronJob.
type CronJobResult struct {
	Action
	// Ours: once the Action is written, Napwake holds the CronJob
	// suspended.
	Ours bool
}

// CronJob decides the spec.suspend and record of one CronJob of an
// opted-in namespace, from whether every managed workload there is paused
// (AllPaused):
//
//   - labelled napwake.dev/ignore=true: left alone, except that a
//     suspension Napwake recorded before the label came is undone;
//   - all paused, not suspended: suspend and record (again, if someone
//     resumed one Napwake had suspended);
//   - all paused, suspended with the record: nothing;
//   - all paused, suspended without the record: its owner's; untouched;
//   - any awake, the record: resume and remove the record;
//   - any awake, no record: nothing.
func CronJob(allPaused bool, cj CronJobState) CronJobResult {
	ours := recorded(cj.Annotations, napwakev1alpha1.AnnotationSuspended)
	release := CronJobResult{Action: Action{Suspend: ptrTo(false), Remove: []string{napwakev1alpha1.AnnotationSuspended}}}
	if !cj.Suspend {
		release.Suspend = nil // resumed already: only the record goes
	}
	switch {
	case cj.Labels[napwakev1alpha1.LabelIgnore] == "true" || !allPaused:
		if ours {
			return release
		}
		return CronJobResult{}
	case !cj.Suspend:
		return CronJobResult{Action: Action{Suspend: ptrTo(true), Set: map[string]string{napwakev1alpha1.AnnotationSuspended: "true"}}, Ours: true}
	}
	return CronJobResult{Ours: ours}
}

func ptrTo[T any](v T) *T { return &v }

// AllPaused says whether every phase is Pausing or Paused: the CronJobs of
// a namespace whose workloads all sleep have nothing to work on. A
// namespace with no managed workload is not paused.
func AllPaused(phases []napwakev1alpha1.Phase) bool {
	if len(phases) == 0 {
		return false
	}
	for _, p := range phases {
		if !IsPaused(p) {
			return false
		}
	}
	return true
}

// IsPaused says whether a phase is within a pause: from the write that
// begins it (Pausing) to the wake's (Resuming).
func IsPaused(p napwakev1alpha1.Phase) bool {
	return p == napwakev1alpha1.PhasePausing || p == napwakev1alpha1.PhasePaused
}

// Named is the outcome for one named object, as the caller wrote it.
type Named[R any] struct {
	Name   string
	Result R
	// Failed is the write's error, "" when it succeeded or there was none.
	Failed string
}

// maxNames bounds the names a condition's message lists: a message is
// read by people, and a namespace may have hundreds of CronJobs.
const maxNames = 10

// list names up to maxNames, sorted, and how many more.
func list(names []string) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) > maxNames {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNames], ", "), len(names)-maxNames)
	}
	return strings.Join(names, ", ")
}

// AutoscalersCondition is the Autoscalers condition from what was done to
// the ScaledObjects that scale the workload, paused or awake. A failed
// write, or an owner's paused-replicas other than 0, makes it False while
// paused; a reset says so; otherwise it says which ScaledObjects hold the
// workload.
func AutoscalersCondition(paused bool, seen []Named[ScaledObjectResult]) Condition {
	if len(seen) == 0 {
		return Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonNoAutoscalers, Message: "no KEDA ScaledObject scales the target"}
	}
	var failed, owners, reset, held []string
	for _, n := range seen {
		switch {
		case n.Failed != "":
			failed = append(failed, fmt.Sprintf("%s (%s)", n.Name, n.Failed))
		case paused && !n.Result.Held:
			owners = append(owners, fmt.Sprintf("%s (its own paused-replicas %q)", n.Name, n.Result.Owners))
		case n.Result.Reset:
			reset = append(reset, n.Name)
		case n.Result.Held:
			held = append(held, n.Name)
		}
	}
	if !paused {
		if len(failed) > 0 {
			return Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonAutoscalerNotPaused,
				Message: "could not remove Napwake's paused-replicas from ScaledObject " + list(failed)}
		}
		return Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonAutoscalersActive,
			Message: "ScaledObject " + list(names(seen)) + " scales the target; Napwake holds none"}
	}
	switch {
	case len(failed)+len(owners) > 0:
		return Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonAutoscalerNotPaused,
			Message: "ScaledObject " + list(append(failed, owners...)) + " may scale the paused target"}
	case len(reset) > 0:
		return Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonAutoscalerReset,
			Message: "paused-replicas of ScaledObject " + list(reset) + " was changed while paused; set back to 0"}
	}
	return Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonAutoscalersPaused,
		Message: "ScaledObject " + list(held) + " holds the target at 0"}
}

// CronJobsCondition is the CronJobs condition from what was done to the
// namespace's CronJobs: the ones Napwake holds suspended, or the ones it
// could not write.
func CronJobsCondition(allPaused bool, seen []Named[CronJobResult]) Condition {
	var failed, ours []string
	for _, n := range seen {
		switch {
		case n.Failed != "":
			failed = append(failed, fmt.Sprintf("%s (%s)", n.Name, n.Failed))
		case n.Result.Ours:
			ours = append(ours, n.Name)
		}
	}
	switch {
	case len(failed) > 0:
		return Condition{Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonCronJobsNotSuspended,
			Message: "could not write CronJob " + list(failed)}
	case allPaused && len(ours) > 0:
		return Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonCronJobsSuspended,
			Message: "every workload of the namespace is paused; Napwake suspended CronJob " + list(ours)}
	case allPaused:
		return Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonCronJobsSuspended,
			Message: "every workload of the namespace is paused; no CronJob needed suspending"}
	}
	return Condition{Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonCronJobsRunning,
		Message: "a workload of the namespace is awake; Napwake holds no CronJob suspended"}
}

func names[R any](seen []Named[R]) []string {
	out := make([]string, 0, len(seen))
	for _, n := range seen {
		out = append(out, n.Name)
	}
	return out
}

// ScaleTargetRef is a ScaledObject's spec.scaleTargetRef.
type ScaleTargetRef struct {
	APIVersion, Kind, Name string
}

// ScalesTarget says whether a ScaledObject's scaleTargetRef names the
// workload of that kind and name. KEDA's defaults apply: an empty kind is
// a Deployment, an empty apiVersion apps/v1; a Deployment or StatefulSet
// of another group is not the workload.
func ScalesTarget(ref ScaleTargetRef, kind napwakev1alpha1.TargetKind, name string) bool {
	refKind := ref.Kind
	if refKind == "" {
		refKind = string(napwakev1alpha1.KindDeployment)
	}
	group, _, _ := strings.Cut(ref.APIVersion, "/")
	if !strings.Contains(ref.APIVersion, "/") {
		group = "" // "v1" is the core group's, "" is KEDA's default, apps/v1
	}
	return ref.Name == name && refKind == string(kind) && (ref.APIVersion == "" || group == "apps")
}

// ScalesTargetRef says whether a ScaledObject's scaleTargetRef names the
// workload target names: ScalesTarget for an apps/v1 Deployment or
// StatefulSet; for another kind, the same kind and group (KEDA scales
// through the scale subresource of whatever version it names) and name.
func ScalesTargetRef(ref ScaleTargetRef, target napwakev1alpha1.TargetRef) bool {
	if target.IsApps() {
		return ScalesTarget(ref, target.Kind, target.Name)
	}
	want, err := target.GroupVersionKind()
	if err != nil || ref.APIVersion == "" {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && ref.Name == target.Name && ref.Kind == want.Kind && gv.Group == want.Group
}
