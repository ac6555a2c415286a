package render

import (
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// environment is preview-42's front → api → db, api held awake by front,
// db by api, a learned edge from front to a cache, and a declared
// dependency on a workload that does not exist.
func environment() []napwakev1alpha1.ManagedWorkload {
	mw := func(name string, phase napwakev1alpha1.Phase, deps ...string) napwakev1alpha1.ManagedWorkload {
		m := napwakev1alpha1.ManagedWorkload{
			ObjectMeta: metav1.ObjectMeta{Namespace: "preview-42", Name: name},
			Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: name}},
			Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: phase, LastActivity: atp(-40 * time.Minute),
				LastActivitySource: napwakev1alpha1.SourceDependent, ResumedAt: atp(-40 * time.Minute)},
		}
		for _, d := range deps {
			m.Spec.Dependencies = append(m.Spec.Dependencies, napwakev1alpha1.DependencyRef{Name: d})
		}
		return m
	}
	cond := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: napwakev1alpha1.ConditionDependencies, Status: status, Reason: reason, Message: msg, LastTransitionTime: at(-40 * time.Minute)}}
	}
	front := mw("front", napwakev1alpha1.PhaseRunning, "api", "search")
	front.Status.LastActivitySource = napwakev1alpha1.SourceRequest
	front.Status.PauseAt = atp(20 * time.Minute)
	front.Status.Dependencies = &napwakev1alpha1.DependenciesStatus{Learned: []napwakev1alpha1.LearnedDependency{{Namespace: "preview-42", Name: "cache", LastSeen: at(-3 * time.Hour)}}}
	front.Status.Conditions = cond(metav1.ConditionFalse, napwakev1alpha1.ReasonDependencyNotFound,
		"cannot wake preview-42/search (no such ManagedWorkload); the others still wake")
	api := mw("api", napwakev1alpha1.PhaseRunning, "db")
	api.Status.Conditions = cond(metav1.ConditionTrue, napwakev1alpha1.ReasonDependenciesResolved,
		"wakes preview-42/db; kept awake by preview-42/front")
	db := mw("db", napwakev1alpha1.PhaseRunning)
	db.Status.Conditions = cond(metav1.ConditionTrue, napwakev1alpha1.ReasonDependenciesResolved,
		"no dependencies; kept awake by preview-42/api (for preview-42/front)")
	cache := mw("cache", napwakev1alpha1.PhasePaused)
	cache.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: at(-10 * time.Minute), Replicas: 1, Reason: napwakev1alpha1.PauseIdle}
	other := mw("other", napwakev1alpha1.PhaseRunning)
	other.Status.PauseAt = atp(5 * time.Minute)
	// Listed out of order: status puts each environment together.
	return []napwakev1alpha1.ManagedWorkload{db, other, cache, api, front}
}

func TestStatusShowsEachEnvironmentTogether(t *testing.T) {
	var b bytes.Buffer
	Status(&b, environment(), nil, "preview-42", Options{Now: now})
	golden(t, "status-environments", b.Bytes())
}

func TestDescribeShowsEachEdgeWithItsStateAndWhoKeepsItAwake(t *testing.T) {
	mws := environment()
	deps := map[string]*napwakev1alpha1.ManagedWorkload{"preview-42/api": &mws[3], "preview-42/search": nil, "preview-42/cache": &mws[2]}
	for _, tc := range []struct {
		name string
		mw   *napwakev1alpha1.ManagedWorkload
	}{
		{"describe-environment-front", &mws[4]},
		{"describe-environment-db", &mws[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			DescribeWith(&b, tc.mw, nil, Around{Dependencies: deps}, Options{Now: now})
			golden(t, tc.name, b.Bytes())
		})
	}
}

func TestEnvironmentsListEveryWorkloadOnceWhateverTheCycles(t *testing.T) {
	var mws []napwakev1alpha1.ManagedWorkload
	for _, pair := range [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}, {"d", "a"}, {"e", "e"}} {
		mws = append(mws, napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: pair[0]},
			Spec: napwakev1alpha1.ManagedWorkloadSpec{Dependencies: []napwakev1alpha1.DependencyRef{{Name: pair[1]}}}})
	}
	order, depth := environments(mws)
	var got []string
	for _, i := range order {
		got = append(got, mws[i].Name+":"+string(rune('0'+depth[i])))
	}
	want := "d:0 a:1 b:2 c:3 e:0"
	if g := joinSpace(got); g != want {
		t.Errorf("environments %q, want %q", g, want)
	}
}

func joinSpace(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x)
	}
	return b.String()
}
