package controller

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/settings"
)

func TestOneRequestWakesADeclaredChainAllAtOnce(t *testing.T) {
	e := newEnv(t)
	e.add("db", 0)
	e.add("api", 0, "db")
	e.add("front", 0, "api")
	e.wantPhase(napwakev1alpha1.PhasePaused, "front", "api", "db")

	e.clock.Step(time.Minute)
	e.annotate("front", napwakev1alpha1.AnnotationLastRequest, e.stamp())
	e.reconcile("front")
	e.wantPhase(napwakev1alpha1.PhaseResuming, "front")
	// Neither waits for front to be Ready, nor db for api: db, reconciled
	// before api, wakes from front's persisted wake alone.
	e.reconcile("db", "api")
	e.wantPhase(napwakev1alpha1.PhaseResuming, "front", "api", "db")
	if r := e.deployment("front").Status.ReadyReplicas; r != 0 {
		t.Fatalf("front has %d Ready replicas; the test means to wake the chain before it is Ready", r)
	}
	wokeAt := e.mw("front").Status.ResumedAt
	for _, name := range []string{"api", "db"} {
		mw := e.mw(name)
		if mw.Status.LastActivitySource != napwakev1alpha1.SourceDependent || !mw.Status.ResumedAt.Equal(wokeAt) {
			t.Errorf("%s woken by %q at %v, want dependent at front's %v", name, mw.Status.LastActivitySource, mw.Status.ResumedAt, wokeAt)
		}
		if got := replicasOf(e.deployment(name).Spec.Replicas); got != 1 {
			t.Errorf("%s scaled to %d, want 1", name, got)
		}
	}
	if got := e.eventsOf(napwakev1alpha1.EventWaking, "woken by dependent "+e.ns+"/front (through "+e.ns+"/api)"); len(got) != 1 {
		t.Errorf("db's Waking events naming front through api: %q, want one", got)
	}
	for _, name := range []string{"db", "api", "front"} {
		e.follow(name)
		e.reconcile(name)
	}
	e.wantPhase(napwakev1alpha1.PhaseRunning, "front", "api", "db")
	if got := e.mw("front").Status.LastActivitySource; got != napwakev1alpha1.SourceRequest {
		t.Errorf("front's source %q, want request: its dependencies' wakes do not overwrite it", got)
	}
}

func TestADependencyIsKeptRunningPastItsIdleAfterWhileItsDependentRuns(t *testing.T) {
	e := newEnv(t)
	e.add("db", 1)
	e.add("api", 1, "db")
	e.reconcile("db")
	// api stays busy; db has nothing of its own for 15 minutes.
	e.clock.Step(5 * time.Minute)
	e.annotate("api", napwakev1alpha1.AnnotationLastActivity, e.stamp())
	e.reconcile("api")
	e.clock.Step(10 * time.Minute)
	e.reconcile("db")
	db := e.mw("db")
	if db.Status.Phase != napwakev1alpha1.PhaseRunning || db.Status.PauseAt != nil {
		t.Fatalf("db %s with pauseAt %v past its idleAfter, want Running with no pauseAt while api runs", db.Status.Phase, db.Status.PauseAt)
	}
	if c := e.condition("db"); !strings.Contains(c.Message, "kept awake by "+e.ns+"/api") {
		t.Errorf("db's Dependencies condition says %q, want it kept awake by api", c.Message)
	}
	// api pauses at its own pauseAt (15m); db is held while api is Pausing.
	e.reconcile("api")
	e.wantPhase(napwakev1alpha1.PhasePausing, "api")
	e.reconcile("db")
	e.wantPhase(napwakev1alpha1.PhaseRunning, "db")
	e.clock.Step(time.Minute)
	released := e.clock.Now().Truncate(time.Second)
	e.follow("api")
	e.reconcile("api")
	e.wantPhase(napwakev1alpha1.PhasePaused, "api")
	// Released: db's own idleAfter counts from api's pause.
	e.reconcile("db")
	db = e.mw("db")
	if db.Status.PauseAt == nil || !db.Status.PauseAt.Time.Equal(released.Add(10*time.Minute)) {
		t.Fatalf("db's pauseAt %v once api paused, want %v (idleAfter from the release)", db.Status.PauseAt, released.Add(10*time.Minute))
	}
	if db.Status.LastActivitySource == napwakev1alpha1.SourceDependent {
		t.Errorf("the release counted as activity: source %q", db.Status.LastActivitySource)
	}
	e.clock.Step(10 * time.Minute)
	e.reconcile("db")
	e.wantPhase(napwakev1alpha1.PhasePausing, "db")
}

func TestADependencyInANamespaceThatDoesNotAllowItIsRefusedAndTheOthersStillWake(t *testing.T) {
	e := newEnv(t)
	shared := e.namespace(nil)
	open := e.namespace(map[string]string{napwakev1alpha1.AnnotationDependentsFrom: e.ns})
	e.add(shared+"/db", 0)
	e.add(open+"/queue", 0)
	e.add("cache", 0)
	e.add("api", 0, shared+"/db", open+"/queue", "cache")
	c := e.condition("api")
	if c.Status != metav1.ConditionFalse || c.Reason != napwakev1alpha1.ReasonDependencyNotAllowed || !strings.Contains(c.Message, shared+"/db") {
		t.Fatalf("api's Dependencies condition %s %s %q, want False DependencyNotAllowed naming %s/db", c.Status, c.Reason, c.Message, shared)
	}
	e.clock.Step(time.Minute)
	e.annotate("api", napwakev1alpha1.AnnotationLastRequest, e.stamp())
	e.reconcile("api", shared+"/db", open+"/queue", "cache")
	e.wantPhase(napwakev1alpha1.PhaseResuming, "api", open+"/queue", "cache")
	e.wantPhase(napwakev1alpha1.PhasePaused, shared+"/db")
	e.reconcile("api")
	if got := e.eventsOf(napwakev1alpha1.ReasonDependencyNotAllowed, shared+"/db"); len(got) != 1 {
		t.Errorf("DependencyNotAllowed events %q, want exactly one", got)
	}
}

func TestBadDependenciesAreReportedAndNeverStopTheOthers(t *testing.T) {
	e := newEnv(t)
	e.add("cache", 0)
	// A Deployment with no ManagedWorkload, and a dependency on itself.
	must(t, k8s.Create(e.ctx, deployment(e.ns, "postgres", 1)))
	e.add("api", 0, "api", "postgres", "cache")
	c := e.condition("api")
	if c.Status != metav1.ConditionFalse || c.Reason != napwakev1alpha1.ReasonDependencyNotFound ||
		!strings.Contains(c.Message, e.ns+"/postgres (no such ManagedWorkload)") || !strings.Contains(c.Message, "its dependency on itself is ignored") {
		t.Fatalf("api's Dependencies condition %s %s %q, want False DependencyNotFound naming postgres and the self-dependency ignored", c.Status, c.Reason, c.Message)
	}
	e.clock.Step(time.Minute)
	e.annotate("api", napwakev1alpha1.AnnotationLastRequest, e.stamp())
	e.reconcile("api", "cache")
	e.wantPhase(napwakev1alpha1.PhaseResuming, "api", "cache")

	// A name that is not a DNS label is refused by the API server, naming the field.
	bad := &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "bad"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{
			TargetRef:    napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "cache"},
			Dependencies: []napwakev1alpha1.DependencyRef{{Name: "Not_A Label"}},
		},
	}
	err := k8s.Create(e.ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "spec.dependencies[0].name") {
		t.Errorf("creating a dependency named %q: %v, want a refusal naming spec.dependencies[0].name", "Not_A Label", err)
	}
}

func TestACycleOfFiftyWakesEachMemberOnceAndNeverHoldsItselfUp(t *testing.T) {
	e := newEnv(t)
	const n = 50
	names := make([]string, n)
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
	}
	for i, name := range names {
		e.add(name, 0, names[(i+1)%n])
	}
	e.clock.Step(time.Minute)
	e.annotate("c7", napwakev1alpha1.AnnotationWakeRequested, e.stamp())
	e.reconcile("c7") // its wake enqueues the others, in any order
	e.reconcile(names...)
	e.wantPhase(napwakev1alpha1.PhaseResuming, names...)
	for _, name := range names {
		e.follow(name)
	}
	e.reconcile(names...)
	e.wantPhase(napwakev1alpha1.PhaseRunning, names...)
	if got := e.eventsOf(napwakev1alpha1.EventWaking, ""); len(got) != n {
		t.Errorf("%d Waking events, want %d: each member woken once", len(got), n)
	}
	// Past every member's idleAfter the cycle does not hold itself up: the
	// first member reconciled pauses, and being awake (Pausing) it holds
	// the rest, each in turn released when the one before it is Paused
	// (its own idleAfter counting from then, as in a chain). Nothing wakes
	// again.
	e.clock.Step(11 * time.Minute)
	e.reconcile(names...)
	e.wantPhase(napwakev1alpha1.PhasePausing, "c0")
	if mw := e.mw("c1"); mw.Status.Phase != napwakev1alpha1.PhaseRunning || mw.Status.PauseAt != nil {
		t.Errorf("c1 %s with pauseAt %v, want Running, held by the pausing c0", mw.Status.Phase, mw.Status.PauseAt)
	}
	e.follow("c0")
	e.reconcile(names...)
	e.wantPhase(napwakev1alpha1.PhasePaused, "c0")
	e.clock.Step(11 * time.Minute)
	e.reconcile(names...)
	e.wantPhase(napwakev1alpha1.PhasePausing, "c1")
	if got := e.eventsOf(napwakev1alpha1.EventWaking, ""); len(got) != 0 {
		t.Errorf("Waking events while the cycle pauses: %q", got)
	}
}

// condition is a workload's Dependencies condition; the test fails without one.
func (e *env) condition(name string) metav1.Condition {
	e.t.Helper()
	c := meta.FindStatusCondition(e.mw(name).Status.Conditions, napwakev1alpha1.ConditionDependencies)
	if c == nil {
		e.t.Fatalf("%s has no Dependencies condition", name)
	}
	return *c
}

// eventsOf drains the recorder and returns the events with reason whose
// message contains text.
func (e *env) eventsOf(reason, text string) []string {
	var out []string
	for {
		select {
		case ev := <-e.events.Events:
			if strings.Contains(ev, " "+reason+" ") && strings.Contains(ev, text) {
				out = append(out, ev)
			}
		default:
			return out
		}
	}
}

func TestADependsOnAnnotationWithSpacesAndEmptyItemsStillWakesWhatItNames(t *testing.T) {
	e := newEnv(t)
	e.add("cache", 0)
	e.add("db", 0)
	// What the opt-in reconciler makes of the annotation on a labelled
	// workload. (An item that is not a name is left out, with an
	// InvalidSetting warning, and the others kept, as
	// docs/design/dependencies.md#unreadable-entries says: package settings
	// tests that.)
	spec, warnings := settings.Spec(napwakev1alpha1.KindDeployment, "api",
		map[string]string{napwakev1alpha1.AnnotationDependsOn: " cache , ,,db ,api,"}, nil, settings.Defaults{IdleAfter: 10 * time.Minute})
	if len(warnings) != 0 || len(spec.Dependencies) != 3 {
		t.Fatalf("dependencies %v, warnings %v; want cache, db and api, no warning", spec.Dependencies, warnings)
	}
	must(t, k8s.Create(e.ctx, deployment(e.ns, "api", 0)))
	must(t, k8s.Create(e.ctx, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "api"}, Spec: spec}))
	e.reconcile("api", "api")
	e.wantPhase(napwakev1alpha1.PhasePaused, "api")
	if c := e.condition("api"); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "its dependency on itself is ignored") {
		t.Errorf("api's Dependencies condition %s %q, want True with its dependency on itself ignored", c.Status, c.Message)
	}
	e.clock.Step(time.Minute)
	e.annotate("api", napwakev1alpha1.AnnotationLastRequest, e.stamp())
	e.reconcile("api", "cache", "db")
	e.wantPhase(napwakev1alpha1.PhaseResuming, "api", "cache", "db")
}
