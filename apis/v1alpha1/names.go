package v1alpha1

// Labels. Each is part of Napwake's public contract
// (docs/design/api.md#the-managedworkload); the chart's NetworkPolicies
// and users' selectors depend on them.
const (
	// LabelEnabled opts a Deployment, StatefulSet or Namespace in: "true".
	LabelEnabled = "napwake.dev/enabled"
	// LabelIgnore keeps a workload out even in an opted-in namespace: "true".
	LabelIgnore = "napwake.dev/ignore"
	// LabelWorkload is on every EndpointSlice the operator writes, naming the
	// ManagedWorkload it routes.
	LabelWorkload = "napwake.dev/workload"
	// LabelForwarded marks EndpointSlices that lead to a NEG forwarder.
	LabelForwarded = "napwake.dev/forwarded"
	// LabelOperator, on forwarder pods, names Napwake's namespace.
	LabelOperator = "napwake.dev/operator"
	// LabelManagedBy is on ManagedWorkloads the operator created for a
	// labelled workload.
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// LabelServiceName is core's EndpointSlice → Service label.
	LabelServiceName = "kubernetes.io/service-name"
	// LabelEndpointSliceManagedBy is core's EndpointSlice owner label.
	LabelEndpointSliceManagedBy = "endpointslice.kubernetes.io/managed-by"
)

// Label values.
const (
	// EndpointSliceManager is this operator's value of
	// LabelEndpointSliceManagedBy.
	EndpointSliceManager = "napwake.dev"
	// EndpointSliceControllerManager is Kubernetes' own EndpointSlice
	// controller: the doorman dials only endpoints from its slices.
	EndpointSliceControllerManager = "endpointslice-controller.k8s.io"
	// ManagedByOperator is the LabelManagedBy value on created ManagedWorkloads.
	ManagedByOperator = "napwake-operator"
)

// Labels on the pods of Napwake's own components, set by the chart. The
// chart's NetworkPolicies and `kubectl napwake version` select by them.
const (
	// LabelControlPlane says which component a pod runs.
	LabelControlPlane = "control-plane"
	// ControlPlaneOperator is the operator's LabelControlPlane value.
	ControlPlaneOperator = "controller-manager"
	// ControlPlaneDoorman is the doorman's LabelControlPlane value.
	ControlPlaneDoorman = "doorman"
	// LabelAppName is the recommended app name label; AppName on Napwake's pods.
	LabelAppName = "app.kubernetes.io/name"
	// AppName is Napwake's LabelAppName value.
	AppName = "napwake"
	// AppNameForwarder is the LabelAppName value on NEG forwarder pods.
	AppNameForwarder = "napwake-forwarder"
	// LabelAppVersion carries the component's version on its pods.
	LabelAppVersion = "app.kubernetes.io/version"
)

// Settings annotations on a workload or its namespace
// (docs/design/api.md#settings-from-annotations).
const (
	AnnotationWake          = "napwake.dev/wake"           // "request" | "ask"
	AnnotationWakePage      = "napwake.dev/wake-page"      // "true" | "false"
	AnnotationWakeMaxWait   = "napwake.dev/wake-max-wait"  // Go duration ≤ 1h
	AnnotationIdleAfter     = "napwake.dev/idle-after"     // Go duration
	AnnotationDependsOn     = "napwake.dev/depends-on"     // "postgres,cache" or "ns/name"
	AnnotationActivityQuery = "napwake.dev/activity-query" // PromQL
	AnnotationAutoResume    = "napwake.dev/auto-resume"    // "true" | "false"
	AnnotationPauseEarly    = "napwake.dev/pause-early"    // "true" | "false"
	// AnnotationAwakeHours is spec.schedule.awake for a labelled workload:
	// windows separated by commas, "Mon-Fri 08:00-19:00, Sat 10:00-14:00".
	AnnotationAwakeHours = "napwake.dev/awake-hours"
	// AnnotationAwakeHoursZone is spec.schedule.timeZone for it: an IANA
	// zone, UTC when absent.
	AnnotationAwakeHoursZone = "napwake.dev/awake-hours-zone"
)

// AnnotationDependentsFrom, on a Namespace, lists the namespaces whose
// workloads may depend on (and so wake and hold awake) the workloads in it:
// "preview-42,preview-43", or DependentsFromAny
// (docs/design/dependencies.md#across-namespaces). A
// workload's own namespace never needs listing.
const AnnotationDependentsFrom = "napwake.dev/dependents-from"

// DependentsFromAny is the AnnotationDependentsFrom value that allows every
// namespace.
const DependentsFromAny = "*"

// Values of AnnotationWake. Exactly these; anything else asks.
const (
	WakeValueRequest = "request"
	WakeValueAsk     = "ask"
)

// Annotations that act, on a ManagedWorkload (or on a labelled workload).
const (
	// AnnotationLastRequest is the RFC 3339 time of a request that wakes it.
	// Written by the doorman only.
	AnnotationLastRequest = "napwake.dev/last-request"
	// AnnotationLastRequestFrom is the waking caller's IP. Doorman only.
	AnnotationLastRequestFrom = "napwake.dev/last-request-from"
	// AnnotationTurnedAway is "<pausedAt RFC3339>/<count>". Doorman only.
	AnnotationTurnedAway = "napwake.dev/turned-away"
	// AnnotationLastActivity is an RFC 3339 time of activity from anyone
	// (CI, portals); it resets the idle clock and wakes a paused workload.
	AnnotationLastActivity = "napwake.dev/last-activity"
	// AnnotationWakeRequested wakes now, whatever wake.mode says.
	AnnotationWakeRequested = "napwake.dev/wake-requested"
	// AnnotationPauseRequested pauses now.
	AnnotationPauseRequested = "napwake.dev/pause-requested"
	// AnnotationKeepAwakeUntil (an RFC 3339 time) keeps the workload awake
	// until then, whatever else says: nothing pauses it, and a paused one
	// is woken (docs/design/schedules-forecast.md#overrides).
	AnnotationKeepAwakeUntil = "napwake.dev/keep-awake-until"
	// AnnotationPauseUntil (an RFC 3339 time) keeps the workload paused
	// until then: a running one is paused, and nothing but
	// AnnotationWakeRequested wakes it.
	AnnotationPauseUntil = "napwake.dev/pause-until"
)

// AnnotationDoormanIgnorePorts, on a Service, lists port names or numbers the
// doorman never takes: "metrics,9090".
const AnnotationDoormanIgnorePorts = "napwake.dev/doorman-ignore-ports"

// GKE annotations the operator reads to tell whether a Service is in NEGs.
const (
	AnnotationGKENEG       = "cloud.google.com/neg"
	AnnotationGKENEGStatus = "cloud.google.com/neg-status"
	AnnotationIngressClass = "kubernetes.io/ingress.class"
)

// Finalizer keeps a deleted ManagedWorkload until its target's replicas are
// restored, its slices are gone and its port holds are over.
const Finalizer = "napwake.dev/finalizer"

// Activity sources, the values of status.lastActivitySource.
const (
	SourceRequest       = "request"
	SourceAnnotation    = "annotation"
	SourcePrometheus    = "prometheus"
	SourceWakeRequested = "wake-requested"
	SourceDependent     = "dependent"
	SourceScaled        = "scaled"
	SourceForecast      = "forecast"
	SourceCreated       = "created"
	SourceUsage         = "usage"
	// SourceSchedule: a window of spec.schedule began.
	SourceSchedule = "schedule"
)

// Condition types.
const (
	// ConditionWakeOnRequest says whether requests reach the doorman.
	ConditionWakeOnRequest = "WakeOnRequest"
	// ConditionTargetAvailable says whether the target exists and can be
	// paused through its scale subresource.
	ConditionTargetAvailable = "TargetAvailable"
	// ConditionActivitySignals says which idle-detection signals are in use.
	ConditionActivitySignals = "ActivitySignals"
	// ConditionDependencies says whether every declared dependency can be
	// woken, and who keeps this workload awake.
	ConditionDependencies = "Dependencies"
	// ConditionGitOps says whether a GitOps controller owns the target's
	// spec.replicas, and so wakes it whenever it re-applies the manifest.
	ConditionGitOps = "GitOps"
	// ConditionSchedule says whether spec.schedule is read and followed;
	// absent without one.
	ConditionSchedule = "Schedule"
	// ConditionAutoscalers says whether the KEDA ScaledObjects that scale
	// the target hold it at 0 while it is paused; absent unless the
	// operator runs with --keda.
	ConditionAutoscalers = "Autoscalers"
	// ConditionCronJobs says which CronJobs of the namespace Napwake holds
	// suspended while every workload of it is paused; absent unless the
	// operator runs with --suspend-cronjobs and the Namespace is labelled
	// LabelEnabled.
	ConditionCronJobs = "CronJobs"
)

// Annotations Napwake writes on the objects around a paused workload
// (docs/pause.md#scaledobjects-and-cronjobs). Each write is recorded by
// an annotation of Napwake's own, and only what is recorded is ever undone.
const (
	// AnnotationKEDAPausedReplicas is KEDA's: a ScaledObject with it keeps
	// its target at that many replicas and stops scaling it.
	AnnotationKEDAPausedReplicas = "autoscaling.keda.sh/paused-replicas"
	// AnnotationSetPausedReplicas, "true" on a ScaledObject, records that
	// Napwake set AnnotationKEDAPausedReplicas there; a wake removes both.
	AnnotationSetPausedReplicas = "napwake.dev/set-paused-replicas"
	// AnnotationSuspended, "true" on a CronJob, records that Napwake set
	// its spec.suspend; a wake resumes it and removes the record.
	AnnotationSuspended = "napwake.dev/suspended"
)

// Reasons of the Autoscalers condition.
const (
	// ReasonNoAutoscalers: no ScaledObject scales the target (or KEDA's
	// CRD is not installed).
	ReasonNoAutoscalers = "NoAutoscalers"
	// ReasonAutoscalersPaused: paused, and every ScaledObject of the
	// target holds it at 0.
	ReasonAutoscalersPaused = "AutoscalersPaused"
	// ReasonAutoscalersActive: running; Napwake holds no ScaledObject.
	ReasonAutoscalersActive = "AutoscalersActive"
	// ReasonAutoscalerReset: paused, and someone changed or removed the
	// paused-replicas Napwake set; it was set back to 0.
	ReasonAutoscalerReset = "AutoscalerReset"
	// ReasonAutoscalerNotPaused: paused, but a ScaledObject could not be
	// held at 0 (its patch failed, or its owner's own paused-replicas is
	// not 0, which Napwake leaves alone).
	ReasonAutoscalerNotPaused = "AutoscalerNotPaused"
)

// Reasons of the CronJobs condition.
const (
	// ReasonCronJobsSuspended: every workload of the namespace is paused;
	// the message names the CronJobs Napwake suspended.
	ReasonCronJobsSuspended = "CronJobsSuspended"
	// ReasonCronJobsRunning: a workload of the namespace is awake (or none
	// is managed); Napwake holds no CronJob suspended.
	ReasonCronJobsRunning = "CronJobsRunning"
	// ReasonCronJobsNotSuspended: a CronJob's patch failed.
	ReasonCronJobsNotSuspended = "CronJobsNotSuspended"
)

// Reasons of the Schedule condition.
const (
	// ReasonScheduleFollowed: the windows and zone were read.
	ReasonScheduleFollowed = "ScheduleFollowed"
	// ReasonInvalidSchedule: a window or the zone could not be read (an
	// unknown zone passes the API server); the schedule is ignored.
	ReasonInvalidSchedule = "InvalidSchedule"
)

// Values of ScheduleStatus.Override.
const (
	OverrideKeepAwake = "keep-awake-until"
	OverridePause     = "pause-until"
)

// Reasons of the GitOps condition.
const (
	// ReasonReplicasNotManaged: no known GitOps controller owns spec.replicas.
	ReasonReplicasNotManaged = "ReplicasNotManaged"
	// ReasonReplicasManagedByGitOps: Argo CD or Flux owns spec.replicas.
	ReasonReplicasManagedByGitOps = "ReplicasManagedByGitOps"
)

// Reasons of the WakeOnRequest condition ("When a workload isn't routed").
const (
	ReasonDoormanRouted           = "DoormanRouted"
	ReasonNoServices              = "NoServices"
	ReasonServedByOtherPods       = "ServedByOtherPods"
	ReasonNodeLocalTraffic        = "NodeLocalTraffic"
	ReasonUnsupportedIPFamily     = "UnsupportedIPFamily"
	ReasonUnsupportedLoadBalancer = "UnsupportedLoadBalancer"
	ReasonForwarderNotReady       = "ForwarderNotReady"
	ReasonDoormanUnavailable      = "DoormanUnavailable"
	ReasonNoFreePort              = "NoFreePort"
	ReasonTooManyPorts            = "TooManyPorts"
	ReasonRoutingFailed           = "RoutingFailed"
	ReasonNotPaused               = "NotPaused"
	ReasonDoormanDisabled         = "DoormanDisabled"
	// CarriedOverPrefix starts a NotPaused-time message that carries a
	// problem found at the last pause.
	CarriedOverPrefix = "at its last pause: "
)

// Reasons of the TargetAvailable condition.
const (
	ReasonTargetFound    = "TargetFound"
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonTargetNotScalable: the target's kind cannot be paused by
	// Napwake, and the message says why: the API server serves no such
	// kind, the operator is not given it (--target-kinds) or may not read
	// or scale it, it has no scale subresource, or its scale names no pod
	// selector. Nothing is paused or scaled.
	ReasonTargetNotScalable = "TargetNotScalable"
)

// Reasons of the ActivitySignals condition.
const (
	ReasonSignalsConfigured = "SignalsConfigured"
	ReasonUsageUnavailable  = "UsageUnavailable"
)

// Reasons of the Dependencies condition
// (docs/design/dependencies.md#across-namespaces).
const (
	// ReasonDependenciesResolved: every declared dependency exists and may be
	// woken from here.
	ReasonDependenciesResolved = "DependenciesResolved"
	// ReasonDependencyNotFound: a declared dependency has no ManagedWorkload.
	ReasonDependencyNotFound = "DependencyNotFound"
	// ReasonDependencyNotAllowed: a declared dependency's Namespace does not
	// list this namespace in AnnotationDependentsFrom.
	ReasonDependencyNotAllowed = "DependencyNotAllowed"
)

// Event reasons.
const (
	EventWokenByRequest = "WokenByRequest"
	// EventRouteConflict warns that a doorman port is claimed for more than
	// one Service port; the doorman serves neither.
	EventRouteConflict = "RouteConflict"
	// EventReplicasManagedByGitOps warns, once, that a GitOps controller
	// owns the target's spec.replicas.
	EventReplicasManagedByGitOps = "ReplicasManagedByGitOps"
	EventNoReadinessProbe        = "NoReadinessProbe"
	EventRequestNotServed        = "RequestNotServed"
	EventRoutingFailed           = "RoutingFailed"
	EventInvalidSetting          = "InvalidSetting"
	EventPausing                 = "Pausing"
	EventPaused                  = "Paused"
	EventPauseCalledOff          = "PauseCalledOff"
	EventWaking                  = "Waking"
	EventRunning                 = "Running"
	EventUnsupportedLB           = "UnsupportedLoadBalancer"
	EventTargetNotFound          = "TargetNotFound"
	EventTargetNotScalable       = "TargetNotScalable"
	// EventForecastHold: the forecast kept the workload awake at its idle
	// pause (autoResume's hold).
	EventForecastHold = "ForecastHold"
	// EventForecastObserved: what the forecast would have done, in Observe
	// mode.
	EventForecastObserved = "ForecastObserved"
	// EventAutoscalerReset warns that a ScaledObject's paused-replicas,
	// set by Napwake, was changed or removed while paused, and set back.
	EventAutoscalerReset = "AutoscalerReset"
	// EventAutoscalerChanged reports that a HorizontalPodAutoscaler or
	// ScaledObject of a paused workload changed its spec: the replicas
	// saved at the pause still win on wake.
	EventAutoscalerChanged = "AutoscalerChanged"
)

// Doorman port range and caps (docs/design/pause-wake.md#ports-holds-and-claims;
// the caps are flags and Helm values).
const (
	DoormanPortMin           = 20000
	DoormanPortMax           = 29999
	DefaultPortsPerWorkload  = 32
	DefaultPortsPerNamespace = 256
)

// Slice names: <service>-napwake-ipv4 / -ipv6.
const (
	SliceSuffixIPv4 = "-napwake-ipv4"
	SliceSuffixIPv6 = "-napwake-ipv6"
)
