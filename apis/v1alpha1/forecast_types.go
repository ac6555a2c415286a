package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ForecastMode says whether the forecast acts or only reports.
// +kubebuilder:validation:Enum=Act;Observe
type ForecastMode string

const (
	// ForecastAct: the forecast wakes, holds and pauses as it decides.
	ForecastAct ForecastMode = "Act"
	// ForecastObserve: the forecast decides and reports (events, figures)
	// what it would have done, without acting.
	ForecastObserve ForecastMode = "Observe"
)

// ForecastLearnFrom says which activity teaches the forecast.
// +kubebuilder:validation:Enum=people;activity
type ForecastLearnFrom string

const (
	// LearnFromPeople: only person-caused activity teaches it: requests and
	// clicks through the doorman, wake-requested, last-activity, and the
	// usage signal while awake.
	LearnFromPeople ForecastLearnFrom = "people"
	// LearnFromActivity: the Prometheus activity query teaches it too (a
	// queue worker, whose callers are not people).
	LearnFromActivity ForecastLearnFrom = "activity"
)

// ForecastSpec turns on the forecast
// (docs/design/schedules-forecast.md#the-forecast).
type ForecastSpec struct {
	// AutoResume wakes the workload before the day's usual first arrival,
	// and holds it awake past idleAfter while someone is likely back soon.
	// +kubebuilder:default=false
	// +optional
	AutoResume bool `json:"autoResume,omitempty"`

	// PauseEarly pauses before idleAfter (from 15 minutes idle) when nobody
	// is likely back soon enough to be worth the wait. A workload whose wake
	// mode is Ask never pauses early.
	// +kubebuilder:default=false
	// +optional
	PauseEarly bool `json:"pauseEarly,omitempty"`

	// Mode is Act (default) or Observe: Observe computes and reports what the
	// forecast would do (events, status.forecast.figures) without acting.
	// +kubebuilder:default=Act
	// +optional
	Mode ForecastMode `json:"mode,omitempty"`

	// ColdStartCost is what one cold start a person sees is worth in awake
	// time: every hold, pre-wake and early pause is priced in it (default
	// 90m). More than 0, at most 24h.
	// +kubebuilder:default="90m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('24h')",message="coldStartCost must be more than 0s and at most 24h"
	// +optional
	ColdStartCost *metav1.Duration `json:"coldStartCost,omitempty"`

	// MaxExtraAwake, a percentage from 1 to 500, caps the awake time the
	// forecast adds against what idleness alone would use: while it is
	// over, the price of a cold start is scaled down in proportion. Unset:
	// no cap.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=500
	// +optional
	MaxExtraAwake *int32 `json:"maxExtraAwake,omitempty"`

	// TimeZone is the IANA zone the forecast's week is counted in (default
	// UTC). An unknown zone turns the forecast off with an InvalidSetting
	// event.
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+\-/]+$`
	// +optional
	TimeZone string `json:"timeZone,omitempty"`

	// LearnFrom is people (default) or activity: activity lets the
	// Prometheus activity query teach the forecast too.
	// +kubebuilder:default=people
	// +optional
	LearnFrom ForecastLearnFrom `json:"learnFrom,omitempty"`
}

// ForecastStatus is the forecast's learned week and what it did, written by
// the operator; it survives an operator restart.
type ForecastStatus struct {
	// State is the forecast's whole learned state, base64 (658 bytes,
	// version 2; see ForecastStateLen): the last 128 idle gaps, 28 days of
	// first arrivals, the latest person, the last resume times, and the
	// hold per hour of the week the plugin draws. A state of another length
	// or version (an older operator's hourly shares among them) is
	// reported once (InvalidSetting) and the forecast starts afresh with
	// no history.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	State string `json:"state,omitempty"`
	// TimeZone is the zone State was learned in: UTC until spec.forecast
	// names another, when what was learned moves to that zone.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
	// LastWeek is, base64, 21 bytes of one bit per slot (Monday 00:00
	// first, the high bit first) saying a person came in that slot's last
	// hour, then 21 saying the forecast would have held a workload left
	// idle at that hour's start: hits are both, misses a person in a slot
	// it would not have held.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	LastWeek string `json:"lastWeek,omitempty"`
	// Figures are what the forecast did and what it cost.
	// +optional
	Figures *ForecastFigures `json:"figures,omitempty"`
	// Tally is what the figures wait on.
	// +optional
	Tally *ForecastTally `json:"tally,omitempty"`
	// Last is the latest action the forecast took (or, in Observe mode,
	// would have taken).
	// +optional
	Last *ForecastAction `json:"last,omitempty"`
	// NextPreWake is the next pre-wake the forecast plans within a week,
	// where autoResume is on (in Observe mode, the one it would make):
	// unset when none pays. A person who comes first calls it off.
	// +optional
	NextPreWake *ForecastPlan `json:"nextPreWake,omitempty"`
}

// ForecastPlan is one planned pre-wake.
type ForecastPlan struct {
	// Wake is when the workload is to be woken: the arrival less its p90
	// resume time and a minute.
	Wake metav1.Time `json:"wake"`
	// Arrive is when the day's first person usually comes.
	Arrive metav1.Time `json:"arrive"`
	// GiveUp is until when it is held awake if nobody comes.
	GiveUp metav1.Time `json:"giveUp"`
}

// ForecastFigures are the forecast's figures, counted since Since (the
// definitions are in docs/forecast.md, the same as the forecast
// simulator's). In Observe mode the wakes and early pauses are the ones it
// would have made.
type ForecastFigures struct {
	// Since is when the counting began.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// ColdStartsPerson counts wakes a person waited for: person-caused
	// activity that found the workload paused, pausing or resuming.
	// +optional
	ColdStartsPerson int64 `json:"coldStartsPerson"`
	// ForecastWakes counts pre-wakes.
	// +optional
	ForecastWakes int64 `json:"forecastWakes"`
	// ForecastWakesUsed counts pre-wakes a person used before the next pause.
	// +optional
	ForecastWakesUsed int64 `json:"forecastWakesUsed"`
	// ColdStartsAvoided counts person-caused activity while awake that
	// idleness alone would have met paused: after a used pre-wake, or while
	// the hold kept the workload awake past its idle pause.
	// +optional
	ColdStartsAvoided int64 `json:"coldStartsAvoided"`
	// ColdStartsMissed counts cold starts people saw while autoResume was
	// on and the forecast had learned a week.
	// +optional
	ColdStartsMissed int64 `json:"coldStartsMissed"`
	// EarlyPauses counts pauses made early (pauseEarly).
	// +optional
	EarlyPauses int64 `json:"earlyPauses"`
	// EarlyPauseRegrets counts early pauses followed by a person while
	// idleness alone would still have kept the workload awake.
	// +optional
	EarlyPauseRegrets int64 `json:"earlyPauseRegrets"`
	// AwakeSeconds is awake time by what woke the workload (the wake's
	// source: request, wake-requested, annotation, forecast, schedule, …),
	// and "hold" for the time the forecast's hold kept it awake past its
	// idle pause.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	AwakeSeconds map[string]int64 `json:"awakeSeconds,omitempty"`
}

// ForecastTally is what the figures wait on, so a restart counts on.
type ForecastTally struct {
	// AwakeSince is when the workload last became awake (zero: paused).
	// +optional
	AwakeSince *metav1.Time `json:"awakeSince,omitempty"`
	// WokenBy is what woke it then.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	WokenBy string `json:"wokenBy,omitempty"`
	// HeldFrom is when the hold began keeping it past its idle pause.
	// +optional
	HeldFrom *metav1.Time `json:"heldFrom,omitempty"`
	// WakeUntil, set after a pre-wake, is until when a person uses it:
	// the next pause (in Observe mode, the would-be wake's idle pause).
	// +optional
	WakeUntil *metav1.Time `json:"wakeUntil,omitempty"`
	// WakePending says the last pre-wake waits for a person.
	// +optional
	WakePending bool `json:"wakePending,omitempty"`
	// RegretBefore, after an early pause, is when idleness alone would have
	// paused: a person before it is a regret.
	// +optional
	RegretBefore *metav1.Time `json:"regretBefore,omitempty"`
	// Budget is the awake time maxExtraAwake is measured from, decayed
	// over a week.
	// +optional
	Budget *AwakeBudget `json:"budget,omitempty"`
}

// AwakeBudget is the awake time the forecast added and the awake time
// idleness alone used, each decayed over a week (a second a week ago
// counts for 1/e of one now), as of At.
type AwakeBudget struct {
	// AddedSeconds is the awake time the forecast's holds and wakes added.
	// +kubebuilder:validation:Minimum=0
	AddedSeconds int64 `json:"addedSeconds"`
	// IdleSeconds is the awake time idleness alone used.
	// +kubebuilder:validation:Minimum=0
	IdleSeconds int64 `json:"idleSeconds"`
	// At is when the two were last brought up to date.
	At metav1.Time `json:"at"`
}

// ForecastAction is one forecast action, with the event's text.
type ForecastAction struct {
	// Action is PreWake, Hold or PauseEarly.
	// +kubebuilder:validation:Enum=PreWake;Hold;PauseEarly
	Action string `json:"action"`
	// Slot is the start of the hour the action is about.
	Slot metav1.Time `json:"slot"`
	// At is when it was taken.
	At metav1.Time `json:"at"`
	// Observed is true for an action Observe mode only reported.
	// +optional
	Observed bool `json:"observed,omitempty"`
	// Message is the event's text: "woke 08:56 for Tue 09:00 (0.83 over
	// 4.2 weeks; lead 3m12s)".
	// +kubebuilder:validation:MaxLength=256
	Message string `json:"message"`
}

// Forecast actions, the values of ForecastAction.Action.
const (
	ForecastActionPreWake    = "PreWake"
	ForecastActionHold       = "Hold"
	ForecastActionPauseEarly = "PauseEarly"
)
