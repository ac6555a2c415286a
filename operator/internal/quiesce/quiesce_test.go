package quiesce

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

const (
	keda   = napwakev1alpha1.AnnotationKEDAPausedReplicas
	record = napwakev1alpha1.AnnotationSetPausedReplicas
	susp   = napwakev1alpha1.AnnotationSuspended
)

func TestScaledObject(t *testing.T) {
	both := []string{keda, record}
	for _, tc := range []struct {
		name        string
		paused      bool
		annotations map[string]string
		want        ScaledObjectResult
	}{
		{"a pause sets paused-replicas 0 and the record", true, nil,
			ScaledObjectResult{Action: Action{Set: map[string]string{keda: "0", record: "true"}}, Held: true}},
		{"a pause keeps what it set", true, map[string]string{keda: "0", record: "true"},
			ScaledObjectResult{Held: true}},
		{"a paused-replicas Napwake set and someone changed is set back", true, map[string]string{keda: "3", record: "true"},
			ScaledObjectResult{Action: Action{Set: map[string]string{keda: "0"}}, Reset: true, Held: true}},
		{"a paused-replicas Napwake set and someone removed is set back", true, map[string]string{record: "true"},
			ScaledObjectResult{Action: Action{Set: map[string]string{keda: "0"}}, Reset: true, Held: true}},
		{"an owner's paused-replicas 0 holds and is not touched", true, map[string]string{keda: "0"},
			ScaledObjectResult{Held: true, Owners: "0"}},
		{"an owner's paused-replicas 2 is not touched and does not hold", true, map[string]string{keda: "2"},
			ScaledObjectResult{Owners: "2"}},
		{"a record other than true is not Napwake's", true, map[string]string{keda: "2", record: "false"},
			ScaledObjectResult{Owners: "2"}},
		{"a wake removes both annotations Napwake set", false, map[string]string{keda: "0", record: "true", "other": "x"},
			ScaledObjectResult{Action: Action{Remove: both}}},
		{"a wake removes both even when someone changed the value", false, map[string]string{keda: "5", record: "true"},
			ScaledObjectResult{Action: Action{Remove: both}}},
		{"a wake leaves an owner's paused-replicas", false, map[string]string{keda: "0"}, ScaledObjectResult{}},
		{"a running workload's ScaledObject without annotations is left alone", false, nil, ScaledObjectResult{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ScaledObject(tc.paused, tc.annotations); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ScaledObject(%v, %v) = %+v, want %+v", tc.paused, tc.annotations, got, tc.want)
			}
		})
	}
}

func TestCronJob(t *testing.T) {
	yes, no := ptrTo(true), ptrTo(false)
	ignore := map[string]string{napwakev1alpha1.LabelIgnore: "true"}
	ours := map[string]string{susp: "true"}
	for _, tc := range []struct {
		name      string
		allPaused bool
		cj        CronJobState
		want      CronJobResult
	}{
		{"all paused suspends a running CronJob and records it", true, CronJobState{},
			CronJobResult{Action: Action{Suspend: yes, Set: map[string]string{susp: "true"}}, Ours: true}},
		{"all paused keeps a CronJob Napwake suspended", true, CronJobState{Suspend: true, Annotations: ours},
			CronJobResult{Ours: true}},
		{"all paused suspends again one someone resumed", true, CronJobState{Annotations: ours},
			CronJobResult{Action: Action{Suspend: yes, Set: map[string]string{susp: "true"}}, Ours: true}},
		{"an owner's suspension is not Napwake's", true, CronJobState{Suspend: true}, CronJobResult{}},
		{"an owner's suspension is never resumed", false, CronJobState{Suspend: true}, CronJobResult{}},
		{"a wake resumes what Napwake suspended and removes the record", false, CronJobState{Suspend: true, Annotations: ours},
			CronJobResult{Action: Action{Suspend: no, Remove: []string{susp}}}},
		{"a wake only removes the record of one someone resumed", false, CronJobState{Annotations: ours},
			CronJobResult{Action: Action{Remove: []string{susp}}}},
		{"an ignored CronJob is not suspended", true, CronJobState{Labels: ignore}, CronJobResult{}},
		{"an ignored CronJob Napwake had suspended is resumed", true, CronJobState{Suspend: true, Annotations: ours, Labels: ignore},
			CronJobResult{Action: Action{Suspend: no, Remove: []string{susp}}}},
		{"an awake namespace leaves a running CronJob", false, CronJobState{}, CronJobResult{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CronJob(tc.allPaused, tc.cj); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("CronJob(%v, %+v) = %+v, want %+v", tc.allPaused, tc.cj, got, tc.want)
			}
		})
	}
}

func TestAllPaused(t *testing.T) {
	const (
		running  = napwakev1alpha1.PhaseRunning
		pausing  = napwakev1alpha1.PhasePausing
		paused   = napwakev1alpha1.PhasePaused
		resuming = napwakev1alpha1.PhaseResuming
	)
	for _, tc := range []struct {
		name   string
		phases []napwakev1alpha1.Phase
		want   bool
	}{
		{"no workload is not paused", nil, false},
		{"paused and pausing are paused", []napwakev1alpha1.Phase{paused, pausing}, true},
		{"one running is awake", []napwakev1alpha1.Phase{paused, running}, false},
		{"one resuming is awake", []napwakev1alpha1.Phase{paused, resuming}, false},
		{"one not yet reconciled is awake", []napwakev1alpha1.Phase{paused, ""}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AllPaused(tc.phases); got != tc.want {
				t.Fatalf("AllPaused(%v) = %v, want %v", tc.phases, got, tc.want)
			}
		})
	}
}

func TestAutoscalersCondition(t *testing.T) {
	held := ScaledObjectResult{Held: true}
	for _, tc := range []struct {
		name   string
		paused bool
		seen   []Named[ScaledObjectResult]
		status metav1.ConditionStatus
		reason string
		says   string
	}{
		{"none", true, nil, metav1.ConditionTrue, napwakev1alpha1.ReasonNoAutoscalers, "no KEDA ScaledObject"},
		{"paused and held", true, []Named[ScaledObjectResult]{{Name: "b", Result: held}, {Name: "a", Result: held}},
			metav1.ConditionTrue, napwakev1alpha1.ReasonAutoscalersPaused, "ScaledObject a, b holds"},
		{"paused and reset", true, []Named[ScaledObjectResult]{{Name: "a", Result: ScaledObjectResult{Reset: true, Held: true}}},
			metav1.ConditionTrue, napwakev1alpha1.ReasonAutoscalerReset, "changed while paused"},
		{"paused with an owner's 2", true, []Named[ScaledObjectResult]{{Name: "a", Result: ScaledObjectResult{Owners: "2"}}},
			metav1.ConditionFalse, napwakev1alpha1.ReasonAutoscalerNotPaused, `its own paused-replicas "2"`},
		{"paused and a failed patch", true, []Named[ScaledObjectResult]{{Name: "a", Result: held, Failed: "forbidden"}},
			metav1.ConditionFalse, napwakev1alpha1.ReasonAutoscalerNotPaused, "a (forbidden)"},
		{"awake", false, []Named[ScaledObjectResult]{{Name: "a"}},
			metav1.ConditionTrue, napwakev1alpha1.ReasonAutoscalersActive, "Napwake holds none"},
		{"awake and a failed removal", false, []Named[ScaledObjectResult]{{Name: "a", Failed: "forbidden"}},
			metav1.ConditionFalse, napwakev1alpha1.ReasonAutoscalerNotPaused, "could not remove"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := AutoscalersCondition(tc.paused, tc.seen)
			if c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.says) {
				t.Fatalf("AutoscalersCondition = %+v, want %s %s saying %q", c, tc.status, tc.reason, tc.says)
			}
		})
	}
}

func TestCronJobsCondition(t *testing.T) {
	ours := CronJobResult{Ours: true}
	many := make([]Named[CronJobResult], 12)
	for i := range many {
		many[i] = Named[CronJobResult]{Name: string(rune('a' + i)), Result: ours}
	}
	for _, tc := range []struct {
		name      string
		allPaused bool
		seen      []Named[CronJobResult]
		status    metav1.ConditionStatus
		reason    string
		says      string
	}{
		{"suspended ones are named", true, []Named[CronJobResult]{{Name: "report", Result: ours}, {Name: "owners"}},
			metav1.ConditionTrue, napwakev1alpha1.ReasonCronJobsSuspended, "suspended CronJob report"},
		{"a long list is cut", true, many, metav1.ConditionTrue, napwakev1alpha1.ReasonCronJobsSuspended, "j and 2 more"},
		{"paused with nothing to suspend", true, nil, metav1.ConditionTrue, napwakev1alpha1.ReasonCronJobsSuspended, "no CronJob needed"},
		{"awake", false, []Named[CronJobResult]{{Name: "report"}}, metav1.ConditionTrue, napwakev1alpha1.ReasonCronJobsRunning, "holds no CronJob"},
		{"a failed write", true, []Named[CronJobResult]{{Name: "report", Failed: "forbidden"}},
			metav1.ConditionFalse, napwakev1alpha1.ReasonCronJobsNotSuspended, "report (forbidden)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CronJobsCondition(tc.allPaused, tc.seen)
			if c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.says) {
				t.Fatalf("CronJobsCondition = %+v, want %s %s saying %q", c, tc.status, tc.reason, tc.says)
			}
		})
	}
}

func TestAnnotationPatchRemovesWithNull(t *testing.T) {
	p := Action{Set: map[string]string{keda: "0"}, Remove: []string{record}}.AnnotationPatch()
	if v := p[keda]; v == nil || *v != "0" {
		t.Fatalf("%s = %v, want 0", keda, v)
	}
	if v, ok := p[record]; !ok || v != nil {
		t.Fatalf("%s = %v (present %v), want null", record, v, ok)
	}
	if (Action{}).AnnotationPatch() != nil || !(Action{}).Empty() {
		t.Fatal("an empty Action writes something")
	}
}

func TestScalesTarget(t *testing.T) {
	dep, sts := napwakev1alpha1.KindDeployment, napwakev1alpha1.KindStatefulSet
	for _, tc := range []struct {
		name string
		ref  ScaleTargetRef
		kind napwakev1alpha1.TargetKind
		want bool
	}{
		{"a name alone is a Deployment of apps/v1", ScaleTargetRef{Name: "api"}, dep, true},
		{"a name alone is not a StatefulSet", ScaleTargetRef{Name: "api"}, sts, false},
		{"a StatefulSet of apps/v1", ScaleTargetRef{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "api"}, sts, true},
		{"another name", ScaleTargetRef{Name: "web"}, dep, false},
		{"another group's Deployment", ScaleTargetRef{APIVersion: "example.com/v1", Kind: "Deployment", Name: "api"}, dep, false},
		{"a core-group kind", ScaleTargetRef{APIVersion: "v1", Kind: "Deployment", Name: "api"}, dep, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ScalesTarget(tc.ref, tc.kind, "api"); got != tc.want {
				t.Fatalf("ScalesTarget(%+v, %s, api) = %v, want %v", tc.ref, tc.kind, got, tc.want)
			}
		})
	}
}

func TestScalesTargetRef(t *testing.T) {
	rollout := napwakev1alpha1.TargetRef{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "api"}
	for _, tc := range []struct {
		name   string
		ref    ScaleTargetRef
		target napwakev1alpha1.TargetRef
		want   bool
	}{
		{"a Deployment as ScalesTarget says", ScaleTargetRef{Name: "api"}, napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"}, true},
		{"the same kind and group", ScaleTargetRef{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "api"}, rollout, true},
		{"another version of the group", ScaleTargetRef{APIVersion: "argoproj.io/v1beta1", Kind: "Rollout", Name: "api"}, rollout, true},
		{"another group", ScaleTargetRef{APIVersion: "example.com/v1alpha1", Kind: "Rollout", Name: "api"}, rollout, false},
		{"KEDA's default, a Deployment", ScaleTargetRef{Name: "api"}, rollout, false},
		{"another name", ScaleTargetRef{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web"}, rollout, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ScalesTargetRef(tc.ref, tc.target); got != tc.want {
				t.Fatalf("ScalesTargetRef(%+v, %+v) = %v, want %v", tc.ref, tc.target, got, tc.want)
			}
		})
	}
}
