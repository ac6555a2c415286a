package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/version"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// now is the fixed moment every golden file is rendered at: a Tuesday.
var now = time.Date(2026, 10, 27, 14, 30, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
func atp(d time.Duration) *metav1.Time {
	t := at(d)
	return &t
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to write it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (rerun with -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", name, path, got, want)
	}
}

// fleet is one workload in each interesting state.
func fleet() ([]napwakev1alpha1.ManagedWorkload, []corev1.Event) {
	mw := func(ns, name string, phase napwakev1alpha1.Phase) napwakev1alpha1.ManagedWorkload {
		return napwakev1alpha1.ManagedWorkload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: napwakev1alpha1.ManagedWorkloadSpec{
				TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: name},
				Wake:      napwakev1alpha1.WakeSpec{Mode: napwakev1alpha1.WakeRequest},
			},
			Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: phase},
		}
	}
	api := mw("preview-42", "api", napwakev1alpha1.PhasePaused)
	api.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: at(-2 * time.Hour), Replicas: 3, Reason: napwakev1alpha1.PauseIdle}
	api.Status.LastActivity = atp(-150 * time.Minute)
	api.Status.LastActivitySource = napwakev1alpha1.SourceRequest
	api.Status.ResumedAt = atp(-5 * time.Hour)
	api.Status.TurnedAway = &napwakev1alpha1.TurnedAwayStatus{PausedAt: at(-2 * time.Hour), Requests: 312}
	api.Status.Doorman = &napwakev1alpha1.DoormanStatus{Routes: []napwakev1alpha1.Route{
		{Service: "api", PortName: "http", Port: 80, DoormanPort: 20017, IPFamilies: []napwakev1alpha1.IPFamily{"IPv4"}},
		{Service: "api-grpc", Port: 9000, DoormanPort: 20018, IPFamilies: []napwakev1alpha1.IPFamily{"IPv4", "IPv6"}, Forwarded: true},
	}}
	api.Status.Conditions = []metav1.Condition{{Type: napwakev1alpha1.ConditionWakeOnRequest, Status: metav1.ConditionTrue, Reason: napwakev1alpha1.ReasonDoormanRouted, LastTransitionTime: at(-2 * time.Hour)}}
	api.Spec.Dependencies = []napwakev1alpha1.DependencyRef{{Name: "postgres"}}
	api.Status.Dependencies = &napwakev1alpha1.DependenciesStatus{Learned: []napwakev1alpha1.LearnedDependency{{Namespace: "shared", Name: "cache", LastSeen: at(-26 * time.Hour)}}}

	web := mw("preview-42", "web", napwakev1alpha1.PhaseRunning)
	web.Status.LastActivity = atp(-12 * time.Minute)
	web.Status.LastActivitySource = napwakev1alpha1.SourceWakeRequested
	web.Status.PauseAt = atp(18 * time.Minute)
	web.Status.ResumedAt = atp(-45 * time.Minute)
	// An old pause's count must not show as this pause's.
	web.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: at(-3 * time.Hour), Replicas: 1, Reason: napwakev1alpha1.PauseIdle}
	web.Status.TurnedAway = &napwakev1alpha1.TurnedAwayStatus{PausedAt: at(-3 * time.Hour), Requests: 9}
	web.Status.LastWake = &napwakev1alpha1.LastWakeStatus{StartedAt: at(-45 * time.Minute), Source: napwakev1alpha1.SourceWakeRequested,
		TotalMilliseconds: 4100, Slowest: napwakev1alpha1.WakeStepReady, Steps: []napwakev1alpha1.WakeStep{
			{Name: napwakev1alpha1.WakeStepWoken, Milliseconds: 40}, {Name: napwakev1alpha1.WakeStepScaled, Milliseconds: 60},
			{Name: napwakev1alpha1.WakeStepScheduled, Milliseconds: 900}, {Name: napwakev1alpha1.WakeStepStarted, Milliseconds: 1000},
			{Name: napwakev1alpha1.WakeStepReady, Milliseconds: 1800}, {Name: napwakev1alpha1.WakeStepRunning, Milliseconds: 300},
		},
		Pod:    "web-5c7b9-q4x2m",
		Advice: "your readiness probe's first success came 1.8 s after the container started: lower `initialDelaySeconds` or `periodSeconds` (web: initialDelaySeconds 1, periodSeconds 2)"}
	web.Status.Usage = &napwakev1alpha1.UsageStatus{IdleMilliCPU: 28, BusyAboveMilliCPU: 42, HourlyLows: []int64{30, -1, 28, 29}, Hour: atp(-30 * time.Minute)}
	web.Status.Conditions = []metav1.Condition{{Type: napwakev1alpha1.ConditionWakeOnRequest, Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonNotPaused,
		Message: napwakev1alpha1.CarriedOverPrefix + "Service web is also served by pods of Deployment legacy", LastTransitionTime: at(-45 * time.Minute)}}
	web.Status.Conditions = append(web.Status.Conditions, metav1.Condition{Type: napwakev1alpha1.ConditionGitOps, Status: metav1.ConditionFalse,
		Reason: napwakev1alpha1.ReasonReplicasManagedByGitOps, Message: "Argo CD (field manager argocd-controller) owns spec.replicas", LastTransitionTime: at(-time.Hour)})

	db := mw("staging", "postgres", napwakev1alpha1.PhasePausing)
	db.Spec.TargetRef.Kind = napwakev1alpha1.KindStatefulSet
	db.Spec.Wake.Mode = napwakev1alpha1.WakeAsk
	db.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: at(-20 * time.Second), Replicas: 1, Reason: napwakev1alpha1.PauseRequested}
	db.Status.LastActivitySource = napwakev1alpha1.SourceCreated
	db.Status.Conditions = []metav1.Condition{{Type: napwakev1alpha1.ConditionWakeOnRequest, Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonNodeLocalTraffic,
		Message: "Service postgres has internalTrafficPolicy: Local", LastTransitionTime: at(-20 * time.Second)}}

	worker := mw("staging", "worker", napwakev1alpha1.PhasePaused)
	worker.Status.Pause = &napwakev1alpha1.PauseStatus{StartedAt: at(-30 * time.Minute), Replicas: 2, Reason: napwakev1alpha1.PauseForecast}
	worker.Status.Conditions = []metav1.Condition{{Type: napwakev1alpha1.ConditionTargetAvailable, Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonTargetNotFound,
		Message: "Deployment worker not found", LastTransitionTime: at(-10 * time.Minute)}}

	events := []corev1.Event{
		{InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Namespace: "staging", Name: "worker"}, Reason: napwakev1alpha1.EventInvalidSetting, Type: corev1.EventTypeWarning,
			Message: `napwake.dev/wake "yes" is neither request nor ask: asking`, LastTimestamp: at(-5 * time.Minute)},
		{InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Namespace: "staging", Name: "worker"}, Reason: napwakev1alpha1.EventInvalidSetting, Type: corev1.EventTypeWarning,
			Message: `napwake.dev/wake "yes" is neither request nor ask: asking`, LastTimestamp: at(-6 * time.Minute)},
		{InvolvedObject: corev1.ObjectReference{Kind: "ManagedWorkload", Namespace: "preview-42", Name: "api"}, Reason: napwakev1alpha1.EventPaused, Type: corev1.EventTypeNormal,
			Message: "Paused after 30m idle; 3 replicas kept", LastTimestamp: at(-2 * time.Hour)},
		{InvolvedObject: corev1.ObjectReference{Kind: "ManagedWorkload", Namespace: "preview-42", Name: "api"}, Reason: napwakev1alpha1.EventWaking, Type: corev1.EventTypeNormal,
			Message: "Woken by a request from 10.0.0.7", LastTimestamp: at(-5 * time.Hour)},
		// The kubelet's word on the web wake pod's image.
		{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "preview-42", Name: "web-5c7b9-q4x2m"}, Reason: "Pulled", Type: corev1.EventTypeNormal,
			Message: `Successfully pulled image "registry.example/web:1.4" in 640ms (640ms including waiting). Image size: 41234567 bytes.`, LastTimestamp: at(-45 * time.Minute)},
		{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "preview-42", Name: "web-5c7b9-q4x2m"}, Reason: "Started", Type: corev1.EventTypeNormal,
			Message: "Started container web", LastTimestamp: at(-45 * time.Minute)},
		// Another namespace's workload of the same name is not this one.
		{InvolvedObject: corev1.ObjectReference{Kind: "ManagedWorkload", Namespace: "other", Name: "api"}, Reason: napwakev1alpha1.EventInvalidSetting, Type: corev1.EventTypeWarning,
			Message: "not ours", LastTimestamp: at(-1 * time.Minute)},
	}
	return []napwakev1alpha1.ManagedWorkload{api, web, db, worker}, events
}

func TestStatusGolden(t *testing.T) {
	mws, events := fleet()
	for _, tc := range []struct {
		name string
		mws  []napwakev1alpha1.ManagedWorkload
		o    Options
	}{
		{"status-all-namespaces", mws, Options{Now: now, AllNamespaces: true}},
		{"status-wide", mws[:2], Options{Now: now, Wide: true}},
		{"status-color", mws[:2], Options{Now: now, Color: true}},
		{"status-empty", nil, Options{Now: now}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			Status(&b, tc.mws, events, "preview-42", tc.o)
			golden(t, tc.name, b.Bytes())
		})
	}
}

func TestDescribeGolden(t *testing.T) {
	mws, events := fleet()
	for i, name := range []string{"describe-paused", "describe-running", "describe-pausing", "describe-target-missing"} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			Describe(&b, &mws[i], events, Options{Now: now})
			golden(t, name, b.Bytes())
		})
	}
}

func TestForecastGolden(t *testing.T) {
	mws, _ := fleet()
	empty := mws[0]
	for _, tc := range []struct {
		name string
		mw   napwakev1alpha1.ManagedWorkload
	}{
		{"forecast-no-data", empty},
		{"forecast-learning", withForecast(empty, 100, nil)},
		{"forecast-week", withForecast(empty, 4*168+30, &napwakev1alpha1.ForecastFigures{
			Since: atp(-30 * 24 * time.Hour), ColdStartsPerson: 14, ColdStartsMissed: 5, ColdStartsAvoided: 21,
			ForecastWakes: 20, ForecastWakesUsed: 15, EarlyPauses: 4, EarlyPauseRegrets: 1,
			AwakeSeconds: map[string]int64{"request": 36000, "forecast": 18000, "hold": 5400},
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			Forecast(&b, ForecastOf(&tc.mw, now), Options{Now: now})
			golden(t, tc.name, b.Bytes())
		})
	}
}

// withForecast is mw with a Berlin forecast of hours of history: weekdays
// busy 09-17, 12 sometimes, a Saturday visit; last week a person at 10 and
// 18 on weekdays, nobody on Friday; figures fig.
func withForecast(mw napwakev1alpha1.ManagedWorkload, hours int64, fig *napwakev1alpha1.ForecastFigures) napwakev1alpha1.ManagedWorkload {
	var w napwakev1alpha1.ForecastWeek
	var lw napwakev1alpha1.LastWeek
	for d := range 5 {
		for h := 9; h < 17; h++ {
			w.Shares[d*24+h] = 0.8
			lw.Busy[d*24+h] = true
		}
		w.Shares[d*24+12] = 0.3
		lw.Busy[d*24+12] = false
		if d < 4 {
			lw.Person[d*24+10], lw.Person[d*24+18] = true, true
		}
	}
	w.Shares[5*24+11] = 0.2
	w.Hours, w.LastPerson = hours, now.Add(-3*time.Hour).Truncate(time.Second)
	mw.Spec.Forecast = &napwakev1alpha1.ForecastSpec{AutoResume: true, TimeZone: "Europe/Berlin"}
	mw.Status.Forecast = &napwakev1alpha1.ForecastStatus{
		State: napwakev1alpha1.WriteForecastState(w), LastWeek: napwakev1alpha1.EncodeLastWeek(lw), Figures: fig,
		Last: &napwakev1alpha1.ForecastAction{Action: napwakev1alpha1.ForecastActionHold, Slot: at(-30 * time.Minute), At: at(-20 * time.Minute),
			Message: "held awake in Tue 15:00 (0.80 over 4.2 weeks; a person 1h10m0s ago)"},
	}
	if fig != nil {
		mw.Status.Forecast.NextPreWake = &napwakev1alpha1.ForecastPlan{Wake: at(17*time.Hour + 26*time.Minute), Arrive: at(17*time.Hour + 30*time.Minute), GiveUp: at(17*time.Hour + 55*time.Minute)}
	}
	return mw
}

func TestForecastOfAnUnreadableState(t *testing.T) {
	mws, _ := fleet()
	mw := mws[0]
	mw.Status.Forecast = &napwakev1alpha1.ForecastStatus{State: "AAAA"}
	v := ForecastOf(&mw, now)
	if v.Problem != "forecast state is 3 bytes, want 658" || v.Shares != nil {
		t.Errorf("problem %q, %d shares; want the length named and no week", v.Problem, len(v.Shares))
	}
}

func TestVersionGolden(t *testing.T) {
	plugin := version.Info{Component: "kubectl-napwake", Version: "v0.1.0", Commit: "abc123", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	for _, tc := range []struct {
		name string
		op   OperatorVersion
	}{
		{"version-found", OperatorVersion{Version: "v0.3.1", Namespace: "napwake-system"}},
		{"version-unknown", OperatorVersion{Version: Unknown, Reason: "no operator pods found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			Version(&b, VersionReport{Plugin: plugin, Operator: tc.op}, Options{Now: now})
			golden(t, tc.name, b.Bytes())
		})
	}
}

func TestReplicaHoursPausedCountsOnlyPausedWorkloads(t *testing.T) {
	mws, _ := fleet()
	hours, n, replicas := ReplicaHoursPaused(mws, now)
	// api: 3 replicas × 2h; worker: 2 × 0.5h; postgres is still Pausing; web runs.
	if hours != 7 || n != 2 || replicas != 5 {
		t.Errorf("got %.2f replica-hours over %d workloads and %d replicas, want 7 over 2 and 5", hours, n, replicas)
	}
}

func TestProblems(t *testing.T) {
	mws, events := fleet()
	for _, tc := range []struct {
		name string
		mw   napwakev1alpha1.ManagedWorkload
		want []string
	}{
		{"a routed workload needs nothing", mws[0], nil},
		{"a problem carried from the last pause, and a GitOps tool owning replicas, are listed while running", mws[1],
			[]string{napwakev1alpha1.ReasonNotPaused, napwakev1alpha1.ReasonReplicasManagedByGitOps}},
		{"a routing reason is listed", mws[2], []string{napwakev1alpha1.ReasonNodeLocalTraffic}},
		{"a missing target and one InvalidSetting per message are listed", mws[3], []string{napwakev1alpha1.ReasonTargetNotFound, napwakev1alpha1.EventInvalidSetting}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Problems(&tc.mw, events, now) {
				got = append(got, p.Reason)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
	old := mws[3]
	stale := []corev1.Event{events[0]}
	stale[0].LastTimestamp = at(-25 * time.Hour)
	if ps := Problems(&old, stale, now); len(ps) != 1 || ps[0].Reason != napwakev1alpha1.ReasonTargetNotFound {
		t.Errorf("an InvalidSetting event from yesterday is listed: %v", ps)
	}
	leaky := mws[0]
	leaky.Status.Conditions = append(slices.Clone(leaky.Status.Conditions),
		metav1.Condition{Type: napwakev1alpha1.ConditionAutoscalers, Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonAutoscalerNotPaused,
			Message: `ScaledObject api (its own paused-replicas "2") may scale the paused target`},
		metav1.Condition{Type: napwakev1alpha1.ConditionCronJobs, Status: metav1.ConditionFalse, Reason: napwakev1alpha1.ReasonCronJobsNotSuspended,
			Message: "could not write CronJob report (forbidden)"})
	if ps := Problems(&leaky, nil, now); len(ps) != 2 || ps[0].Reason != napwakev1alpha1.ReasonAutoscalerNotPaused || ps[1].Reason != napwakev1alpha1.ReasonCronJobsNotSuspended {
		t.Errorf("a ScaledObject that may scale the paused target and a CronJob not written are not both listed: %v", ps)
	}
	notPaused := mws[1]
	notPaused.Status.Conditions = notPaused.Status.Conditions[:1]
	notPaused.Status.Conditions[0].Message = "the workload is running"
	if ps := Problems(&notPaused, nil, now); len(ps) != 0 {
		t.Errorf("a plain NotPaused is listed: %v", ps)
	}
}

func TestTurnedAwayThisPauseIgnoresAnEarlierPause(t *testing.T) {
	mws, _ := fleet()
	if got := TurnedAwayThisPause(&mws[0]); got != 312 {
		t.Errorf("this pause: got %d, want 312", got)
	}
	if got := TurnedAwayThisPause(&mws[1]); got != 0 {
		t.Errorf("a running workload's last pause: got %d, want 0", got)
	}
	stale := mws[0]
	stale.Status.TurnedAway = &napwakev1alpha1.TurnedAwayStatus{PausedAt: at(-9 * time.Hour), Requests: 5}
	if got := TurnedAwayThisPause(&stale); got != 0 {
		t.Errorf("an earlier pause's count: got %d, want 0", got)
	}
}

// TestATargetOfAnotherKindIsNamedWithItsGroup: status names a target
// kind.group/name as kubectl does, describe Kind/name and its apiVersion,
// when it is not an apps/v1 Deployment or StatefulSet.
func TestATargetOfAnotherKindIsNamedWithItsGroup(t *testing.T) {
	for _, tc := range []struct {
		ref              napwakev1alpha1.TargetRef
		status, describe string
	}{
		{napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"}, "Deployment/api", "Deployment/api"},
		{napwakev1alpha1.TargetRef{APIVersion: "apps/v1", Kind: napwakev1alpha1.KindStatefulSet, Name: "db"}, "StatefulSet/db", "StatefulSet/db"},
		{napwakev1alpha1.TargetRef{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web"}, "Rollout.argoproj.io/web", "Rollout/web (argoproj.io/v1alpha1)"},
	} {
		if got := tc.ref.String(); got != tc.status {
			t.Errorf("status names %+v %q, want %q", tc.ref, got, tc.status)
		}
		if got := describeTarget(tc.ref); got != tc.describe {
			t.Errorf("describe names %+v %q, want %q", tc.ref, got, tc.describe)
		}
	}
}
