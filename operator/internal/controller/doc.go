// Package controller holds the operator's reconcilers: the ManagedWorkload
// reconciler that pauses and wakes workloads, and the opt-in reconciler that
// creates ManagedWorkloads for labelled Deployments, StatefulSets, objects
// of the kinds of --target-kinds, and Namespaces. The decisions themselves live in package decide: this package
// reads the cluster, asks decide for one step at a time, and takes it. It
// decides nothing of its own about when to pause, wake, route or scale, and
// it writes status.doorman and the WakeOnRequest condition never: the Router
// owns them.
//
// Its files, as Cluster API splits a reconciler:
//
//   - managedworkload.go: the ManagedWorkload reconciler, its watches, and
//     Reconcile: one ordered list of named phases (learnCallerEdge,
//     reportAutoscalerChanges, addFinalizer, readTarget, gatherActivity,
//     gatherDependents, gatherSchedule, gatherForecast) that fill the
//     scope, then takeSteps, the loop over decide's steps (status write,
//     Route, Scale, Unroute, Wait): in a pause or wake it calls the Router
//     only when decide says so, and announceStep gives each step's event
//     and metrics after its write.
//   - scope.go: reconcileScope, what one reconcile knows (data only): the
//     ManagedWorkload, its target, what the phases gathered for
//     decide.Input, and what the next status write persists.
//   - status.go: who writes which part of status, the reconciler's
//     resourceVersion-guarded status patch (patchStatus), one function per
//     condition called from setConditions, the State read from and written
//     to status, and the stale-cache guard.
//   - activity.go: the activity signals of one reconcile: the usage signal
//     (busy) and the Prometheus activity query; what the ActivitySignals
//     condition says is decide.ActivitySignals.
//   - delete.go: a ManagedWorkload being deleted (finalize: restore the
//     replicas, let the Router clean up, drop the finalizer), a target
//     that is gone (targetMissing) and one that cannot be paused
//     (targetNotScalable: TargetAvailable False TargetNotScalable, why).
//   - target.go: the Deployment, StatefulSet or other kind (read by
//     package workload), read and scaled through its scale subresource.
//   - usage.go: the Usage and Queries signals' interfaces, and Usage from
//     metrics.k8s.io, judged against the idle level package idlelevel learns.
//   - wake.go: a wake's timeline (status.lastWake): its signal as it
//     begins, its scale's time, and its first Ready pod read as it becomes
//     Running, worked out by package timeline.
//   - router.go: the Router interface, the seam to package routing.
//   - dependencies.go: the dependency graph (package deps) fed from the
//     ManagedWorkload and Namespace informers (updateGraph), a new wake's
//     plan enqueued,
//     what a workload's dependents say to its cycle (woken by, held,
//     released), and the one-time event of the Dependencies condition.
//   - schedule.go: spec.schedule and the override annotations read for
//     decide (Input.Schedule), and one InvalidSetting event per change of
//     what cannot be read.
//   - learn.go: learned dependencies from napwake.dev/last-request-from
//     (learnCallerEdge), recorded on the caller's status (addLearnedEdge),
//     the calling pod's owners followed to its workload.
//   - forecast.go, forecastfigures.go: the workload's forecast (package
//     forecast) read from status.forecast (loadForecast), taught
//     person-caused activity (teachForecastPeople), asked for decide's
//     Input.Forecast (forecastInput; in Observe mode, reportWouldBe), and
//     its figures counted; written back with the reconcile's status patch.
//   - index.go: the IndexTargetRef and IndexPodIP field indexes, which the
//     manager adds once.
//   - optin.go: the opt-in reconciler.
//   - latekinds.go: the --target-kinds kinds the API server serves only
//     after the manager started, watched (and opted in) once served.
//   - autoscalers.go: the HPA and ScaledObject watch's notes of a spec
//     changed while the workload is paused, reported as AutoscalerChanged.
//   - quiesce.go: the ScaledObjects and CronJobs held while paused.
package controller
