package controller

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/promquery"
)

// fakePrometheus serves the instant-query API on a real socket, answering
// every query with the value held in v ("" answers a query error).
func fakePrometheus(t *testing.T) (*httptest.Server, *atomic.Value) {
	t.Helper()
	var v atomic.Value
	v.Store("0")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" || r.FormValue("query") == "" { // POSTed as a form
			http.NotFound(w, r)
			return
		}
		val := v.Load().(string)
		if val == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1764489600,"` + val + `"]}]}}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &v
}

func (f *fixture) setQuery(q string) {
	f.t.Helper()
	mw := f.managedWorkload()
	mw.Spec.Activity = &napwakev1alpha1.ActivitySpec{Prometheus: &napwakev1alpha1.PrometheusActivity{Query: q}}
	must(f.t, k8s.Update(f.ctx, mw))
}

func (f *fixture) activitySignals() *metav1.Condition {
	return meta.FindStatusCondition(f.managedWorkload().Status.Conditions, napwakev1alpha1.ConditionActivitySignals)
}

// A queue worker's query keeps it up while its queue has work, lets it
// pause once empty, and wakes it when work comes back
// (docs/design/time.md#the-prometheus-activity-query).
func TestAPrometheusQueryKeepsAWorkloadUpAndWakesItWhenPaused(t *testing.T) {
	srv, value := fakePrometheus(t)
	f := newFixture(t, 2)
	f.r.Queries = &promquery.Client{URL: srv.URL}
	f.setQuery(`sum(queue_length{queue="jobs"})`)
	value.Store("12")
	res := f.reconcile()
	if c := f.activitySignals(); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "its Prometheus activity query") {
		t.Fatalf("ActivitySignals %+v, want True naming the query", c)
	}
	if res.RequeueAfter != queryEvery {
		t.Errorf("requeue after %v, want the query's %v", res.RequeueAfter, queryEvery)
	}
	f.clock.Step(40 * time.Minute) // past idleAfter (10m), the queue still has work
	f.reconcile()
	if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhaseRunning || mw.Status.LastActivitySource != napwakev1alpha1.SourcePrometheus {
		t.Fatalf("phase %q source %q with work queued, want Running prometheus", mw.Status.Phase, mw.Status.LastActivitySource)
	}
	value.Store("0")
	f.pauseIt()
	f.clock.Step(time.Minute)
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePaused {
		t.Fatalf("phase %q with an empty queue, want Paused", p)
	}
	value.Store("3")
	f.clock.Step(queryEvery)
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhaseResuming || mw.Status.LastActivitySource != napwakev1alpha1.SourcePrometheus {
		t.Fatalf("phase %q source %q once work is queued, want Resuming prometheus", mw.Status.Phase, mw.Status.LastActivitySource)
	}
	if got := replicasOf(f.deployment().Spec.Replicas); got != 2 {
		t.Fatalf("replicas %d, want the saved 2", got)
	}
	f.wantEvent(napwakev1alpha1.EventWaking, napwakev1alpha1.SourcePrometheus)
}

// A failing query counts as no activity, and the condition says so; with
// no --prometheus-url the condition says the query is not evaluated.
func TestAPrometheusQueryThatCannotRunIsReported(t *testing.T) {
	srv, value := fakePrometheus(t)
	f := newFixture(t, 2)
	f.r.Queries = &promquery.Client{URL: srv.URL}
	f.setQuery(`sum(rate(`)
	value.Store("")
	f.reconcile()
	if c := f.activitySignals(); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "query is failing") {
		t.Fatalf("ActivitySignals %+v, want False saying the query is failing", c)
	}
	f.pauseIt() // idle: the failing query is no activity
	g := newFixture(t, 1)
	g.setQuery(`up`)
	g.reconcile()
	if c := g.activitySignals(); c == nil || !strings.Contains(c.Message, "not evaluated: the operator has no --prometheus-url") {
		t.Fatalf("ActivitySignals %+v, want it to say the query is not evaluated", c)
	}
}
