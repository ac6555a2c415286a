package controller

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/promquery"
)

// The forecast tests learn the way the operator does in production: a
// person's last-activity stamp at hh:30 of the busy hour and another 50
// minutes later on each of learnDays days, driven by the fake clock, the
// workload woken by each, Ready 30 s later and paused after it. Nothing
// seeds status.forecast. Two weeks, so whatever weekday the tests run on,
// the day after has two alike before it (docs/forecast.md#how-it-decides).

// learnDays is how many days the tests learn; the forecast acts on the next.
const learnDays = 15

// comeback is the gap between a day's two visits.
const comeback = 50 * time.Minute

// resumeTakes is how long each wake takes to Ready in these tests: the
// forecast's p90, so its lead is 1m30s.
const resumeTakes = 30 * time.Second

// forecastFixture is a fixture whose workload has spec.forecast and
// idleAfter, and whose busy hour is three hours after the clock's start,
// each day, in UTC.
func forecastFixture(t *testing.T, spec napwakev1alpha1.ForecastSpec, idleAfter time.Duration) (*fixture, time.Time) {
	t.Helper()
	f := newFixture(t, 1)
	mw := f.managedWorkload()
	mw.Spec.Forecast = &spec
	mw.Spec.IdleAfter = &metav1.Duration{Duration: idleAfter}
	must(t, k8s.Update(f.ctx, mw))
	f.runToRunning()
	return f, start.Truncate(time.Hour).Add(3 * time.Hour)
}

// visit is a person at the clock's time: the last-activity stamp, the wake
// it makes (Ready resumeTakes later), then at leave a pause for idleness.
func (f *fixture) visit(leave time.Time) {
	f.t.Helper()
	f.come()
	f.clock.SetTime(leave)
	f.reconcile()
	f.followSpec()
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePaused {
		f.t.Fatalf("phase %q after a visit, want Paused", p)
	}
}

// learnWeek visits at busy:30 and back later on learnDays days (the
// second visit finds it paused, or held once the gap is learned), paused two
// hours after the second, and leaves the clock at the last pause.
func (f *fixture) learnWeek(busy time.Time, back time.Duration) {
	f.t.Helper()
	for day := range learnDays {
		at := busy.AddDate(0, 0, day).Add(30 * time.Minute)
		f.clock.SetTime(at)
		f.come()
		f.clock.SetTime(at.Add(back - time.Minute))
		f.reconcile()
		f.followSpec()
		f.reconcile()
		f.clock.SetTime(at.Add(back))
		f.visit(at.Add(back + 2*time.Hour))
	}
	f.drain()
}

// come is a person at the clock's time: the last-activity stamp and the
// wake it makes, Ready resumeTakes later.
func (f *fixture) come() {
	f.t.Helper()
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastActivity, f.stamp())
	f.reconcile()
	if f.managedWorkload().Status.Phase == napwakev1alpha1.PhaseResuming {
		f.clock.Step(resumeTakes)
		f.followSpec()
		f.reconcile()
	}
}

// preWokenAndUsed, after learnWeek, lets the pre-wake of the day after
// wake the workload, Ready resumeTakes later, and has a person come at the
// usual time (busy:30), which it returns.
func (f *fixture) preWokenAndUsed(busy time.Time) time.Time {
	f.t.Helper()
	arrive := busy.AddDate(0, 0, learnDays).Add(30 * time.Minute)
	f.clock.SetTime(arrive.Add(-(resumeTakes + time.Minute)))
	f.reconcile()
	f.clock.Step(resumeTakes)
	f.followSpec()
	f.reconcile()
	f.clock.SetTime(arrive)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastActivity, f.stamp())
	f.reconcile()
	return arrive
}

// drain forgets the events so far.
func (f *fixture) drain() {
	for {
		select {
		case <-f.events.Events:
		default:
			return
		}
	}
}

func (f *fixture) forecastStatus() *napwakev1alpha1.ForecastStatus {
	f.t.Helper()
	fs := f.managedWorkload().Status.Forecast
	if fs == nil {
		f.t.Fatal("no status.forecast")
	}
	return fs
}

// wantPreWake steps to the pre-wake instant of the usual first arrival
// (busy:30) on the day after learning and checks the wake and its event.
func (f *fixture) wantPreWake(busy time.Time) {
	f.t.Helper()
	slot := busy.AddDate(0, 0, learnDays)
	arrive := slot.Add(30 * time.Minute)
	wakeAt := arrive.Add(-(resumeTakes + time.Minute))
	f.clock.SetTime(slot)
	f.r.SyncPeriod = 48 * time.Hour
	if res := f.reconcile(); res.RequeueAfter != 30*time.Minute-(resumeTakes+time.Minute) {
		f.t.Errorf("at the busy hour's start requeue after %v, want the pre-wake instant, 28m30s away", res.RequeueAfter)
	}
	f.clock.SetTime(wakeAt.Add(-time.Second))
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePaused {
		f.t.Fatalf("phase %q a second before the pre-wake, want Paused", p)
	}
	f.clock.SetTime(wakeAt)
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhaseResuming || mw.Status.LastActivitySource != napwakev1alpha1.SourceForecast {
		f.t.Fatalf("phase %q source %q at the pre-wake, want Resuming forecast", mw.Status.Phase, mw.Status.LastActivitySource)
	}
	want := fmt.Sprintf("woke %s to be Ready at %s, held until %s: on %ss someone came by ", wakeAt.Format("15:04"), arrive.Format("15:04"),
		arrive.Add(time.Minute).Format("15:04"), arrive.Weekday())
	f.wantEvent(napwakev1alpha1.EventWaking, "woken by forecast: restoring 1 replicas: "+want)
	if l := mw.Status.Forecast.Last; l == nil || l.Action != napwakev1alpha1.ForecastActionPreWake || !strings.HasPrefix(l.Message, want) ||
		!strings.HasSuffix(l.Message, "(lead 1m30s); a cold start is worth 90m") || l.Observed {
		f.t.Errorf("status.forecast.last %+v, want the pre-wake %q…(lead 1m30s); a cold start is worth 90m", l, want)
	}
	if fig := mw.Status.Forecast.Figures; fig.ForecastWakes != 1 {
		f.t.Errorf("forecastWakes %d, want 1", fig.ForecastWakes)
	}
}

func TestAWeekOfActivityTeachesThePreWake(t *testing.T) {
	f, busy := forecastFixture(t, napwakev1alpha1.ForecastSpec{AutoResume: true}, 10*time.Minute)
	f.learnWeek(busy, comeback)
	fs := f.forecastStatus()
	w, err := napwakev1alpha1.ReadForecastState(fs.State)
	if err != nil {
		t.Fatal(err)
	}
	// An idle stretch begun at the busy hour's start is held (someone
	// came back 50 minutes after hh:30); one begun 12 hours later is not.
	slot := (int(busy.Weekday())+6)%7*24 + busy.Hour()
	if w.Shares[slot] == 0 || w.Shares[(slot+12)%168] != 0 || w.Hours < learnDays*24-24 {
		t.Errorf("busy hour's hold %.2f, 12 hours later %.2f, %d hours; want a hold, none and two weeks", w.Shares[slot], w.Shares[(slot+12)%168], w.Hours)
	}
	if len(fs.State) != base64.StdEncoding.EncodedLen(napwakev1alpha1.ForecastStateLen) {
		t.Errorf("status.forecast.state is %d characters", len(fs.State))
	}
	base := f.forecastStatus().Figures.DeepCopy()
	f.wantPreWake(busy)
	// A person at the usual time uses the wake and avoids a cold start.
	f.clock.Step(resumeTakes)
	f.followSpec()
	f.reconcile()
	f.clock.SetTime(busy.AddDate(0, 0, learnDays).Add(30 * time.Minute))
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastActivity, f.stamp())
	f.reconcile()
	fig := f.forecastStatus().Figures
	if fig.ForecastWakesUsed != 1 || fig.ColdStartsAvoided != base.ColdStartsAvoided+1 || fig.ColdStartsPerson != base.ColdStartsPerson {
		t.Errorf("figures %+v, want 1 wake used, 1 more cold start avoided, no more cold starts than %+v", fig, base)
	}
	if got := testutil.ToFloat64(f.metrics.Forecast.WakesUsed.WithLabelValues("Act")); got != 1 {
		t.Errorf("napwake_forecast_wakes_used_total{mode=Act} = %v, want 1", got)
	}
}

func TestARestartedOperatorKeepsTheLearnedWeek(t *testing.T) {
	f, busy := forecastFixture(t, napwakev1alpha1.ForecastSpec{AutoResume: true}, 10*time.Minute)
	f.learnWeek(busy, comeback)
	f.r = f.reconciler(k8s) // a new operator: nothing but status
	f.wantPreWake(busy)
}

func TestTheHoldKeepsAWorkloadAwakeThroughAUsualGap(t *testing.T) {
	f, busy := forecastFixture(t, napwakev1alpha1.ForecastSpec{AutoResume: true}, 10*time.Minute)
	f.learnWeek(busy, comeback)
	arrive := f.preWokenAndUsed(busy)
	f.drain()
	held := f.forecastStatus().Figures.AwakeSeconds[holdReason] // the holds while learning
	f.clock.SetTime(arrive.Add(10 * time.Minute))               // idle for idleAfter
	f.reconcile()
	mw := f.managedWorkload()
	until := arrive.Add(comeback + time.Minute) // a minute past the usual return
	if mw.Status.Phase != napwakev1alpha1.PhaseRunning || !mw.Status.PauseAt.Time.Equal(until) {
		t.Fatalf("phase %q pauseAt %v at the idle pause before the usual return, want Running until %v", mw.Status.Phase, mw.Status.PauseAt, until)
	}
	f.wantEvent(napwakev1alpha1.EventForecastHold, fmt.Sprintf("Not paused for idleness: held awake until %s (41m past idleAfter): after %s on %ss someone came back within 51m in ",
		until.Format("15:04"), arrive.Format("15:04"), arrive.Weekday()))
	f.clock.SetTime(until)
	f.reconcile()
	if p := f.managedWorkload().Status.Phase; p != napwakev1alpha1.PhasePausing {
		t.Fatalf("phase %q once the hold ends with nobody back, want Pausing", p)
	}
	if s := f.forecastStatus().Figures.AwakeSeconds[holdReason] - held; s != int64(41*time.Minute/time.Second) {
		t.Errorf("awake seconds held %d, want 2460 (from the idle pause to the hold's end)", s)
	}
	// The budget maxExtraAwake reads counts it as added, as of the pause.
	if b := f.forecastStatus().Tally.Budget; b == nil || !b.At.Time.Equal(until) || b.AddedSeconds < 2460 || b.IdleSeconds == 0 {
		t.Errorf("status.forecast.tally.budget %+v, want at least 2460 s added as of %v, and idleness alone's", b, until)
	}
}

func TestPauseEarlyPausesInQuietHoursWithReasonForecast(t *testing.T) {
	f, busy := forecastFixture(t, napwakev1alpha1.ForecastSpec{PauseEarly: true}, time.Hour)
	// Visits 5 hours apart: nobody ever came back within 4 hours.
	f.learnWeek(busy, 5*time.Hour)
	quiet := busy.AddDate(0, 0, learnDays).Add(30*time.Minute + 5*time.Hour)
	f.clock.SetTime(quiet)
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastActivity, f.stamp())
	f.reconcile()
	f.clock.Step(resumeTakes)
	f.followSpec()
	f.reconcile()
	f.clock.SetTime(quiet.Add(15 * time.Minute))
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhasePausing || mw.Status.Pause.Reason != napwakev1alpha1.PauseForecast {
		t.Fatalf("phase %q pause %+v idle 15m in quiet hours, want Pausing (Forecast)", mw.Status.Phase, mw.Status.Pause)
	}
	f.wantEvent(napwakev1alpha1.EventPausing, fmt.Sprintf("Pausing (Forecast): paused early at %s, idle 15m0s of 1h0m0s: ", quiet.Add(15*time.Minute).Format("15:04")))
	if fig := mw.Status.Forecast.Figures; fig.EarlyPauses != 1 {
		t.Errorf("earlyPauses %d, want 1", fig.EarlyPauses)
	}
	// A person before idleness alone would have paused it: a regret.
	f.followSpec()
	f.reconcile()
	f.clock.SetTime(quiet.Add(40 * time.Minute))
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastActivity, f.stamp())
	f.reconcile()
	if fig := f.forecastStatus().Figures; fig.EarlyPauseRegrets != 1 {
		t.Errorf("earlyPauseRegrets %d, want 1", fig.EarlyPauseRegrets)
	}
}

func TestObserveWritesStatusAndEventsButDoesNotAct(t *testing.T) {
	f, busy := forecastFixture(t, napwakev1alpha1.ForecastSpec{AutoResume: true, Mode: napwakev1alpha1.ForecastObserve}, 10*time.Minute)
	f.learnWeek(busy, comeback)
	arrive := busy.AddDate(0, 0, learnDays).Add(30 * time.Minute)
	wakeAt := arrive.Add(-(resumeTakes + time.Minute))
	f.clock.SetTime(wakeAt)
	f.reconcile()
	f.reconcile()
	mw := f.managedWorkload()
	if mw.Status.Phase != napwakev1alpha1.PhasePaused {
		t.Fatalf("phase %q in Observe mode at the pre-wake instant, want Paused", mw.Status.Phase)
	}
	want := fmt.Sprintf("would wake %s to be Ready at %s, held until ", wakeAt.Format("15:04"), arrive.Format("15:04"))
	f.wantEvent(napwakev1alpha1.EventForecastObserved, want)
	select {
	case e := <-f.events.Events:
		t.Errorf("a second event %q: the observed wake is reported once", e)
	default:
	}
	l := mw.Status.Forecast.Last
	if l == nil || !l.Observed || !strings.HasPrefix(l.Message, want) || mw.Status.Forecast.Figures.ForecastWakes != 1 {
		t.Errorf("status.forecast last %+v figures %+v, want the observed wake counted", l, mw.Status.Forecast.Figures)
	}
	// A person in the would-be wake's idle time: it would have been used.
	f.clock.SetTime(arrive.Add(time.Minute))
	f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationLastActivity, f.stamp())
	f.reconcile()
	if fig := f.forecastStatus().Figures; fig.ForecastWakesUsed != 1 || fig.ColdStartsAvoided != 1 {
		t.Errorf("figures %+v, want the would-be wake used and a cold start avoided", fig)
	}
}

func TestRobotsTurnedAwayDoNotTeachTheForecast(t *testing.T) {
	f, busy := forecastFixture(t, napwakev1alpha1.ForecastSpec{AutoResume: true}, 10*time.Minute)
	f.pauseIt()
	before := f.forecastStatus()
	for h := range 3 {
		f.clock.SetTime(busy.Add(time.Duration(h) * time.Hour))
		pausedAt := f.managedWorkload().Status.Pause.StartedAt.UTC().Format(time.RFC3339)
		f.annotate(&napwakev1alpha1.ManagedWorkload{}, f.mw, napwakev1alpha1.AnnotationTurnedAway, fmt.Sprintf("%s/%d", pausedAt, 10*(h+1)))
		f.reconcile()
	}
	f.clock.SetTime(busy.Add(4 * time.Hour))
	f.reconcile()
	mw := f.managedWorkload()
	w, err := napwakev1alpha1.ReadForecastState(mw.Status.Forecast.State)
	if err != nil {
		t.Fatal(err)
	}
	if mw.Status.Phase != napwakev1alpha1.PhasePaused || mw.Status.TurnedAway == nil || mw.Status.TurnedAway.Requests != 30 {
		t.Fatalf("phase %q turnedAway %+v, want Paused with 30 turned away", mw.Status.Phase, mw.Status.TurnedAway)
	}
	b, _ := napwakev1alpha1.ReadForecastState(before.State)
	if !w.LastPerson.Equal(b.LastPerson) || w.Shares != b.Shares || mw.Status.Forecast.Figures.ColdStartsPerson != 0 {
		t.Errorf("robots turned away taught it: last person %v (was %v), cold starts %d", w.LastPerson, b.LastPerson, mw.Status.Forecast.Figures.ColdStartsPerson)
	}
}

func TestBadForecastSettingsAreReportedNotFatal(t *testing.T) {
	t.Run("an unknown zone turns the forecast off with InvalidSetting; it goes on learning", func(t *testing.T) {
		f, busy := forecastFixture(t, napwakev1alpha1.ForecastSpec{AutoResume: true, TimeZone: "Mars/Olympus_Mons"}, 10*time.Minute)
		f.wantEvent(napwakev1alpha1.EventInvalidSetting, `spec.forecast.timeZone "Mars/Olympus_Mons" is not a known IANA zone: the forecast is off (it goes on learning)`)
		f.learnWeek(busy, comeback)
		fs, w, last := f.learned(busy)
		if !w.LastPerson.Equal(last) || fs.TimeZone != "UTC" {
			t.Errorf("learned: last person %v, zone %q; want %v, UTC", w.LastPerson, fs.TimeZone, last)
		}
		if fs.Last != nil || fs.NextPreWake != nil || fs.Figures.ForecastWakes != 0 || fs.Figures.AwakeSeconds[holdReason] != 0 {
			t.Errorf("with the forecast off: last %+v, next pre-wake %+v, figures %+v; want no action", fs.Last, fs.NextPreWake, fs.Figures)
		}
	})
	t.Run("an older operator's hourly status.forecast is no history yet, reported once", func(t *testing.T) {
		f, _ := forecastFixture(t, napwakev1alpha1.ForecastSpec{AutoResume: true}, 10*time.Minute)
		mw := f.managedWorkload()
		mw.Status.Forecast.State = base64.StdEncoding.EncodeToString(append([]byte{1}, make([]byte, 215)...))
		must(t, k8s.Status().Update(f.ctx, mw))
		f.reconcile()
		f.wantEvent(napwakev1alpha1.EventInvalidSetting, "reading status.forecast.state: forecast state is from an older version: no history yet: the forecast starts afresh")
		if _, err := napwakev1alpha1.ReadForecastState(f.forecastStatus().State); err != nil {
			t.Errorf("status.forecast.state after starting afresh: %v", err)
		}
	})
}

func TestThePrometheusQueryTeachesOnlyWithLearnFromActivity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		from   napwakev1alpha1.ForecastLearnFrom
		taught bool
	}{
		{"a queue worker's query is not a person by default", "", false},
		{"with learnFrom: activity its query teaches the forecast", napwakev1alpha1.LearnFromActivity, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, value := fakePrometheus(t)
			f, _ := forecastFixture(t, napwakev1alpha1.ForecastSpec{AutoResume: true, LearnFrom: tc.from}, 10*time.Minute)
			f.r.Queries = &promquery.Client{URL: srv.URL}
			f.setQuery(`sum(queue_length{queue="jobs"})`)
			value.Store("12")
			f.clock.Step(time.Minute)
			f.reconcile()
			w, err := napwakev1alpha1.ReadForecastState(f.forecastStatus().State)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.LastPerson.Equal(f.clock.Now().Truncate(time.Second)); got != tc.taught {
				t.Errorf("last person %v at %v: taught %v, want %v", w.LastPerson, f.clock.Now(), got, tc.taught)
			}
		})
	}
}

func TestForecastPricesAreValidatedByTheAPIServer(t *testing.T) {
	f, _ := forecastFixture(t, napwakev1alpha1.ForecastSpec{AutoResume: true}, 10*time.Minute)
	if c := f.managedWorkload().Spec.Forecast.ColdStartCost; c == nil || c.Duration != 90*time.Minute {
		t.Errorf("spec.forecast.coldStartCost defaults to %v, want 90m", c)
	}
	pct := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		name  string
		spec  napwakev1alpha1.ForecastSpec
		field string
	}{
		{"a cold start worth nothing", napwakev1alpha1.ForecastSpec{ColdStartCost: &metav1.Duration{}}, "spec.forecast.coldStartCost"},
		{"a negative cold start", napwakev1alpha1.ForecastSpec{ColdStartCost: &metav1.Duration{Duration: -time.Minute}}, "spec.forecast.coldStartCost"},
		{"a cold start worth over a day", napwakev1alpha1.ForecastSpec{ColdStartCost: &metav1.Duration{Duration: 25 * time.Hour}}, "spec.forecast.coldStartCost"},
		{"a budget of 0 %", napwakev1alpha1.ForecastSpec{MaxExtraAwake: pct(0)}, "spec.forecast.maxExtraAwake"},
		{"a budget of 501 %", napwakev1alpha1.ForecastSpec{MaxExtraAwake: pct(501)}, "spec.forecast.maxExtraAwake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := &napwakev1alpha1.ManagedWorkload{
				ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "priced"},
				Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"}, Forecast: &tc.spec},
			}
			if err := k8s.Create(f.ctx, bad); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("creating it: %v, want a refusal naming %s", err, tc.field)
			}
		})
	}
}

// Every workload learns from people's wakes, with no spec.forecast, and
// acts on nothing; turning autoResume on later, in the team's zone, acts on
// what it learned from the first day (docs/forecast.md#what-it-keeps).
func TestEveryWorkloadLearnsAndTheForecastActsOnItWhenTurnedOn(t *testing.T) {
	f := newFixture(t, 1)
	mw := f.managedWorkload()
	mw.Spec.IdleAfter = &metav1.Duration{Duration: 10 * time.Minute}
	must(t, k8s.Update(f.ctx, mw))
	f.runToRunning()
	busy := start.Truncate(time.Hour).Add(3 * time.Hour)
	f.learnWeek(busy, comeback)

	fs, w, last := f.learned(busy)
	if !w.LastPerson.Equal(last) || fs.TimeZone != "UTC" || w.Hours < learnDays*24-24 {
		t.Errorf("learned: last person %v, zone %q, %d hours; want %v, UTC, two weeks", w.LastPerson, fs.TimeZone, w.Hours, last)
	}
	if fs.Last != nil || fs.NextPreWake != nil || fs.Figures.ForecastWakes != 0 || fs.Figures.AwakeSeconds[holdReason] != 0 {
		t.Errorf("with no spec.forecast: last %+v, next pre-wake %+v, figures %+v; want no action, none planned", fs.Last, fs.NextPreWake, fs.Figures)
	}
	if fs.Figures.ColdStartsPerson < learnDays || fs.Figures.ColdStartsMissed != 0 {
		t.Errorf("figures %+v, want each day's cold starts counted, none missed (autoResume off)", fs.Figures)
	}
	if got := testutil.ToFloat64(f.metrics.Forecast.ColdStartsPerson.WithLabelValues("Act")); got != 0 {
		t.Errorf("napwake_forecast_cold_starts_person_total{mode=Act} = %v for a workload with no forecast, want 0", got)
	}

	mw = f.managedWorkload()
	mw.Spec.Forecast = &napwakev1alpha1.ForecastSpec{AutoResume: true, TimeZone: "Europe/Berlin"}
	must(t, k8s.Update(f.ctx, mw))
	f.reconcile()
	fs = f.forecastStatus()
	arrive := busy.AddDate(0, 0, learnDays).Add(30 * time.Minute)
	if fs.TimeZone != "Europe/Berlin" {
		t.Errorf("status.forecast.timeZone %q once spec.forecast names Europe/Berlin", fs.TimeZone)
	}
	if p := fs.NextPreWake; p == nil || !p.Arrive.Time.Equal(arrive) || !p.Wake.Time.Equal(arrive.Add(-(resumeTakes + time.Minute))) {
		t.Errorf("status.forecast.nextPreWake %+v, want a wake 1m30s before %v", p, arrive)
	}
	wakeAt := arrive.Add(-(resumeTakes + time.Minute))
	f.clock.SetTime(wakeAt)
	f.reconcile()
	if mw := f.managedWorkload(); mw.Status.Phase != napwakev1alpha1.PhaseResuming || mw.Status.LastActivitySource != napwakev1alpha1.SourceForecast {
		t.Fatalf("phase %q source %q at the pre-wake, want Resuming forecast", mw.Status.Phase, mw.Status.LastActivitySource)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	f.wantEvent(napwakev1alpha1.EventWaking, fmt.Sprintf("woke %s to be Ready at %s", wakeAt.In(berlin).Format("15:04"), arrive.In(berlin).Format("15:04")))
}

// maxExtraAwake is read from the budget decayed over a week: a workload
// whose holds added a hundred times idleness alone's awake time, capped at
// 1 %, pauses at idleAfter where it held before.
func TestMaxExtraAwakeReadsTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget *napwakev1alpha1.AwakeBudget
		held   bool
	}{
		{"within the cap", &napwakev1alpha1.AwakeBudget{AddedSeconds: 10, IdleSeconds: 100000}, true},
		{"over it", &napwakev1alpha1.AwakeBudget{AddedSeconds: 100000, IdleSeconds: 1000}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			one := int32(1)
			f, busy := forecastFixture(t, napwakev1alpha1.ForecastSpec{AutoResume: true, MaxExtraAwake: &one}, 10*time.Minute)
			f.learnWeek(busy, comeback)
			// As in TestTheHoldKeepsAWorkloadAwakeThroughAUsualGap: then
			// idle for idleAfter.
			arrive := f.preWokenAndUsed(busy)
			mw := f.managedWorkload()
			tc.budget.At = metav1.NewTime(arrive)
			mw.Status.Forecast.Tally.Budget = tc.budget
			must(t, k8s.Status().Update(f.ctx, mw))
			f.clock.SetTime(arrive.Add(10 * time.Minute))
			f.reconcile()
			if p := f.managedWorkload().Status.Phase; (p == napwakev1alpha1.PhaseRunning) != tc.held {
				t.Errorf("phase %q at idleAfter with budget %+v and maxExtraAwake 1, want held %v", p, tc.budget, tc.held)
			}
		})
	}
}

// learned reads status.forecast after learnWeek(busy, comeback), with the
// last person it must hold: the week's last comeback.
func (f *fixture) learned(busy time.Time) (*napwakev1alpha1.ForecastStatus, napwakev1alpha1.ForecastWeek, time.Time) {
	f.t.Helper()
	fs := f.forecastStatus()
	w, err := napwakev1alpha1.ReadForecastState(fs.State)
	if err != nil {
		f.t.Fatal(err)
	}
	return fs, w, busy.AddDate(0, 0, learnDays-1).Add(30*time.Minute + comeback)
}
