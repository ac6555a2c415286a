package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TargetKind names the kind of workload a ManagedWorkload pauses:
// Deployment or StatefulSet (apps/v1), or any kind with a scale subresource
// that the operator is given (--target-kinds; docs/pause.md#other-kinds-of-workload).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
type TargetKind string

const (
	// KindDeployment is an apps/v1 Deployment.
	KindDeployment TargetKind = "Deployment"
	// KindStatefulSet is an apps/v1 StatefulSet.
	KindStatefulSet TargetKind = "StatefulSet"
)

// TargetRef names the workload a ManagedWorkload pauses. It lives in the
// ManagedWorkload's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.apiVersion) && size(self.apiVersion) > 0 || self.kind == 'Deployment' || self.kind == 'StatefulSet'",message="targetRef.apiVersion is required for any kind but Deployment and StatefulSet (which mean apps/v1)"
type TargetRef struct {
	// APIVersion is the kind's group/version, e.g. argoproj.io/v1alpha1.
	// Empty, Deployment and StatefulSet mean apps/v1; any other kind needs it.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+((alpha|beta)[0-9]+)?$`
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind is Deployment, StatefulSet, or another kind with a scale
	// subresource (then apiVersion is required).
	// +required
	Kind TargetKind `json:"kind"`

	// Name is the workload's name in the ManagedWorkload's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// WakeMode says what wakes a paused workload through the doorman.
// +kubebuilder:validation:Enum=Request;Ask
type WakeMode string

const (
	// WakeRequest wakes the workload on any request the doorman cannot tell
	// is a health check.
	WakeRequest WakeMode = "Request"
	// WakeAsk wakes the workload only on a person's click on the asleep page.
	WakeAsk WakeMode = "Ask"
)

// WakeSpec says how the doorman treats requests to the paused workload.
type WakeSpec struct {
	// Mode is Request (any request wakes it) or Ask (only a person's click).
	// +kubebuilder:default=Request
	// +optional
	Mode WakeMode `json:"mode,omitempty"`

	// Page sends browsers the waking-up page instead of holding them.
	// +kubebuilder:default=true
	// +optional
	Page *bool `json:"page,omitempty"`

	// MaxWait is how long the doorman holds a connection waiting for a Ready
	// pod: a Go duration, at most 1h.
	// +kubebuilder:default="2m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('1h')",message="maxWait must be more than 0s and at most 1h"
	// +optional
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`
}

// ActivitySpec lists extra idle-detection signals.
type ActivitySpec struct {
	// Prometheus is a query whose result above zero counts as activity.
	// +optional
	Prometheus *PrometheusActivity `json:"prometheus,omitempty"`
}

// PrometheusActivity is a PromQL query evaluated by the operator against its
// --prometheus-url.
type PrometheusActivity struct {
	// Query is PromQL; a result greater than zero is activity, and wakes the
	// workload while it is paused.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`
}

// DependencyRef names another ManagedWorkload that wakes when this one does.
type DependencyRef struct {
	// Name of the ManagedWorkload.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Namespace of the ManagedWorkload; this one's when empty.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ManagedWorkloadSpec is what the user asks of Napwake for one workload.
//
// targetRef is immutable, except that a Deployment's or StatefulSet's
// apiVersion may be spelled out as apps/v1 or left out (they mean the
// same), either way round.
// +kubebuilder:validation:XValidation:rule="self.targetRef.kind == oldSelf.targetRef.kind && self.targetRef.name == oldSelf.targetRef.name && (self.targetRef.kind in ['Deployment', 'StatefulSet'] ? (has(self.targetRef.apiVersion) ? self.targetRef.apiVersion : 'apps/v1') == (has(oldSelf.targetRef.apiVersion) ? oldSelf.targetRef.apiVersion : 'apps/v1') : (has(self.targetRef.apiVersion) ? self.targetRef.apiVersion : '-') == (has(oldSelf.targetRef.apiVersion) ? oldSelf.targetRef.apiVersion : '-'))",message="targetRef is immutable; delete and recreate the ManagedWorkload to manage another workload"
type ManagedWorkloadSpec struct {
	// TargetRef names the Deployment, StatefulSet or other scalable workload
	// to pause. Immutable.
	// +required
	TargetRef TargetRef `json:"targetRef"`

	// IdleAfter pauses the workload after this long with no activity, from
	// 1m to 168h. Unset, the operator's --default-idle-after (30m) applies.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="idleAfter must be between 1m and 168h"
	// +optional
	IdleAfter *metav1.Duration `json:"idleAfter,omitempty"`

	// Wake says what wakes the paused workload through the doorman.
	// +kubebuilder:default={}
	// +optional
	Wake WakeSpec `json:"wake,omitempty"`

	// Activity lists extra idle-detection signals.
	// +optional
	Activity *ActivitySpec `json:"activity,omitempty"`

	// Dependencies are ManagedWorkloads woken whenever this one wakes, and
	// never paused while it runs.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Dependencies []DependencyRef `json:"dependencies,omitempty"`

	// Forecast turns on the forecast's actions.
	// +optional
	Forecast *ForecastSpec `json:"forecast,omitempty"`

	// Schedule lists the hours the workload is awake by policy.
	// +optional
	Schedule *ScheduleSpec `json:"schedule,omitempty"`
}

// Phase is where a ManagedWorkload is in its pause/wake cycle.
// +kubebuilder:validation:Enum=Running;Pausing;Paused;Resuming
type Phase string

const (
	// PhaseRunning means the workload runs with its own replicas.
	PhaseRunning Phase = "Running"
	// PhasePausing means the replica count is saved and the workload is
	// being scaled to zero.
	PhasePausing Phase = "Pausing"
	// PhasePaused means no pod of the workload is left.
	PhasePaused Phase = "Paused"
	// PhaseResuming means the saved replicas are restored and no pod is
	// Ready yet.
	PhaseResuming Phase = "Resuming"
)

// PauseReason says why a pause began.
// +kubebuilder:validation:Enum=Idle;Requested;Forecast
type PauseReason string

const (
	// PauseIdle: no activity for idleAfter.
	PauseIdle PauseReason = "Idle"
	// PauseRequested: the pause-requested annotation.
	PauseRequested PauseReason = "Requested"
	// PauseForecast: the forecast's pauseEarly.
	PauseForecast PauseReason = "Forecast"
)

// PauseStatus records one pause. It is written before anything is scaled, so
// no crash can lose the replica count.
type PauseStatus struct {
	// StartedAt names the pause; Wake it tokens are signed for it.
	StartedAt metav1.Time `json:"startedAt"`
	// Replicas is what a wake restores.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
	// Reason is why the pause began.
	Reason PauseReason `json:"reason"`
}

// TurnedAwayStatus counts the requests the doorman turned away in one pause.
type TurnedAwayStatus struct {
	// PausedAt names the pause the count is for.
	PausedAt metav1.Time `json:"pausedAt"`
	// Requests is the count, summed across doorman pods.
	// +kubebuilder:validation:Minimum=0
	Requests int64 `json:"requests"`
}

// IPFamily is IPv4 or IPv6, as in core/v1.
// +kubebuilder:validation:Enum=IPv4;IPv6
type IPFamily string

// Route is one Service port the doorman answers for while the workload is
// paused. The operator writes routes; the doorman listens on DoormanPort.
type Route struct {
	// Service is the name of the routed Service, in this namespace.
	// +kubebuilder:validation:MaxLength=63
	Service string `json:"service"`
	// PortName is the Service port's name; empty for a single unnamed port.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	PortName string `json:"portName,omitempty"`
	// Port is the Service port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
	// DoormanPort is the doorman's port for this Service port.
	// +kubebuilder:validation:Minimum=20000
	// +kubebuilder:validation:Maximum=29999
	DoormanPort int32 `json:"doormanPort"`
	// IPFamilies the Service's slices are written for.
	// +kubebuilder:validation:MaxItems=2
	// +listType=atomic
	// +optional
	IPFamilies []IPFamily `json:"ipFamilies,omitempty"`
	// Forwarded is true when the route reaches the doorman through a
	// forwarder in the workload's namespace.
	// +optional
	Forwarded bool `json:"forwarded,omitempty"`
}

// PortHold keeps a released doorman port from every other route until Until.
type PortHold struct {
	// Port is the released doorman port.
	// +kubebuilder:validation:Minimum=20000
	// +kubebuilder:validation:Maximum=29999
	Port int32 `json:"port"`
	// Until is when another route may take it.
	Until metav1.Time `json:"until"`
}

// DoormanStatus is the operator ↔ doorman contract: the routes the doorman
// listens for, and the ports held after routes went.
type DoormanStatus struct {
	// Routes the doorman answers for.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Routes []Route `json:"routes,omitempty"`
	// Forwarded is true when any route goes through a forwarder.
	// +optional
	Forwarded bool `json:"forwarded,omitempty"`
	// PortHolds are released ports nobody may take until their time.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	PortHolds []PortHold `json:"portHolds,omitempty"`
}

// LearnedDependency is a workload this one was seen calling.
type LearnedDependency struct {
	// Namespace of the called ManagedWorkload.
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the called ManagedWorkload.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// LastSeen is when a call was last seen; edges unseen for 7 days go.
	LastSeen metav1.Time `json:"lastSeen"`
}

// DependenciesStatus records what the operator learned about dependencies.
type DependenciesStatus struct {
	// Learned are workloads this one was seen calling.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Learned []LearnedDependency `json:"learned,omitempty"`
}

// UsageStatus is what the default activity signal (CPU usage through the
// metrics API) has learned about a workload: its own idle level.
type UsageStatus struct {
	// IdleMilliCPU is the learned idle level: the CPU, in millicores, the
	// workload's busiest pod uses when nobody calls it (a low percentile of
	// the last day's hourly lows).
	// +kubebuilder:validation:Minimum=0
	// +optional
	IdleMilliCPU int64 `json:"idleMilliCPU"`
	// BusyAboveMilliCPU is the usage at or above which a pod counts as busy.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BusyAboveMilliCPU int64 `json:"busyAboveMilliCPU"`
	// HourlyLows holds, for each of the last 24 hours, the lowest usage in
	// millicores seen while no other signal fired, or -1 for an hour
	// without a sample; newest last.
	// +kubebuilder:validation:MaxItems=24
	// +kubebuilder:validation:items:Minimum=-1
	// +listType=atomic
	// +optional
	HourlyLows []int64 `json:"hourlyLows,omitempty"`
	// Hour is the start of the hour the last entry of HourlyLows covers.
	// +optional
	Hour *metav1.Time `json:"hour,omitempty"`
}

// SavingsStatus is what the workload's pauses have saved, recorded by the
// operator as each pause ends.
type SavingsStatus struct {
	// PausedReplicaSeconds sums, over every ended pause, the replicas the
	// pause kept times how long it lasted.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PausedReplicaSeconds int64 `json:"pausedReplicaSeconds"`
	// Pauses is how many pauses ended.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Pauses int64 `json:"pauses"`
	// Since is when the first of them ended.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// WakeStepName names one step of a wake's timeline (docs/pause.md#where-a-wakes-time-went).
// +kubebuilder:validation:Enum=woken;scaled;scheduled;started;ready;running
type WakeStepName string

// The steps of a wake, in order; each runs from the end of the one before.
const (
	// WakeStepWoken: the waking signal fired → the operator wrote Resuming.
	WakeStepWoken WakeStepName = "woken"
	// WakeStepScaled: Resuming written → the target's scale written.
	WakeStepScaled WakeStepName = "scaled"
	// WakeStepScheduled: scale written → the first new pod's PodScheduled.
	WakeStepScheduled WakeStepName = "scheduled"
	// WakeStepStarted: scheduled → its containers started, the image pull
	// included (a pod's status records no time for the pull alone).
	WakeStepStarted WakeStepName = "started"
	// WakeStepReady: containers started → the pod's Ready condition.
	WakeStepReady WakeStepName = "ready"
	// WakeStepRunning: the pod Ready → the operator saw it and wrote Running.
	WakeStepRunning WakeStepName = "running"
)

// WakeStep is how long one step of a wake took.
type WakeStep struct {
	// Name is the step.
	Name WakeStepName `json:"name"`
	// Milliseconds is how long it took; pod times are whole seconds, so
	// the steps between them are too.
	// +kubebuilder:validation:Minimum=0
	Milliseconds int64 `json:"milliseconds"`
}

// LastWakeStatus is the timeline of the last wake, written as it begins
// (startedAt and source) and completed when the phase becomes Running.
type LastWakeStatus struct {
	// StartedAt is when the waking signal fired.
	StartedAt metav1.Time `json:"startedAt"`
	// Source is the activity source that woke it, as lastActivitySource.
	// +kubebuilder:validation:MaxLength=63
	Source string `json:"source"`
	// Pod names the wake's first Ready pod, whose times the pod's steps
	// are; its events (the image's Pulled) tell more.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Pod string `json:"pod,omitempty"`
	// TotalMilliseconds is startedAt → Running; 0 while the wake is under
	// way.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TotalMilliseconds int64 `json:"totalMilliseconds,omitempty"`
	// Steps are the steps known, in order; one that could not be told is
	// left out and Note says why.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Steps []WakeStep `json:"steps,omitempty"`
	// Slowest is the step that took longest.
	// +optional
	Slowest WakeStepName `json:"slowest,omitempty"`
	// Advice says how the slowest step could be shortened.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Advice string `json:"advice,omitempty"`
	// Note says which steps are left out and why.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Note string `json:"note,omitempty"`
}

// ManagedWorkloadStatus is what Napwake observed and did.
type ManagedWorkloadStatus struct {
	// Phase is Running, Pausing, Paused or Resuming.
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// ObservedGeneration is the spec generation the status was worked out from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Pause records the current or last pause.
	// +optional
	Pause *PauseStatus `json:"pause,omitempty"`
	// LastActivity is when the last activity signal fired.
	// +optional
	LastActivity *metav1.Time `json:"lastActivity,omitempty"`
	// LastActivitySource names the signal that last fired: request,
	// annotation, prometheus, wake-requested, dependent, scaled, forecast,
	// created, usage, schedule.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	LastActivitySource string `json:"lastActivitySource,omitempty"`
	// PauseAt is when a Running workload pauses if nothing happens.
	// +optional
	PauseAt *metav1.Time `json:"pauseAt,omitempty"`
	// ResumedAt is when the last wake began (phase Resuming).
	// +optional
	ResumedAt *metav1.Time `json:"resumedAt,omitempty"`
	// LastWake is where the last wake's time went.
	// +optional
	LastWake *LastWakeStatus `json:"lastWake,omitempty"`
	// TurnedAway counts requests the doorman turned away in the current or
	// last pause.
	// +optional
	TurnedAway *TurnedAwayStatus `json:"turnedAway,omitempty"`
	// Doorman is the operator ↔ doorman contract.
	// +optional
	Doorman *DoormanStatus `json:"doorman,omitempty"`
	// Dependencies records learned dependencies.
	// +optional
	Dependencies *DependenciesStatus `json:"dependencies,omitempty"`
	// Forecast is the forecast's week.
	// +optional
	Forecast *ForecastStatus `json:"forecast,omitempty"`
	// Savings is what ended pauses saved, for kubectl napwake savings.
	// +optional
	Savings *SavingsStatus `json:"savings,omitempty"`
	// Usage is the default activity signal's learned idle level.
	// +optional
	Usage *UsageStatus `json:"usage,omitempty"`
	// Schedule is where spec.schedule and the override annotations stand.
	// +optional
	Schedule *ScheduleStatus `json:"schedule,omitempty"`
	// Conditions: WakeOnRequest, TargetAvailable, ActivitySignals,
	// Dependencies, GitOps, Schedule, Autoscalers, CronJobs.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// ManagedWorkload asks Napwake to pause one Deployment or StatefulSet while
// nobody uses it, and to wake it when someone needs it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mw,categories=napwake
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.targetRef.kind`,priority=1
// +kubebuilder:printcolumn:name="Wake",type=string,JSONPath=`.spec.wake.mode`
// +kubebuilder:printcolumn:name="Last Activity",type=date,JSONPath=`.status.lastActivity`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.status.lastActivitySource`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ManagedWorkload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ManagedWorkloadSpec `json:"spec"`
	// +optional
	Status ManagedWorkloadStatus `json:"status,omitempty"`
}

// ManagedWorkloadList is a list of ManagedWorkloads.
// +kubebuilder:object:root=true
type ManagedWorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagedWorkload `json:"items"`
}

func init() {
	registered = append(registered, &ManagedWorkload{}, &ManagedWorkloadList{})
}
