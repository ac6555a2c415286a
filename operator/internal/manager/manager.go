// Package manager assembles the operator: a controller-runtime manager with
// leader election, metrics and health endpoints, the ManagedWorkload and
// opt-in reconcilers, and the Router. main parses flags and calls Run; tests
// call New with an envtest config.
//
// It must not decide anything about a workload: it assembles the parts
// (manager, indexes, metrics, reconcilers, router) and runs them.
package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/config"
	"napwake.dev/operator/internal/controller"
	"napwake.dev/operator/internal/metrics"
	"napwake.dev/operator/internal/promquery"
	"napwake.dev/operator/internal/settings"
	"napwake.dev/shared/rewatch"
)

// LeaderElectionID names the Lease the operator's replicas compete for.
const LeaderElectionID = "napwake-operator.napwake.dev"

// RouterDeps is what a Router is built from.
type RouterDeps struct {
	Manager ctrl.Manager
	Config  config.Config
	Clock   clock.Clock
	// Metrics are the operator's, registered: the Router records route moves.
	Metrics *metrics.Metrics
}

// Options configure New.
type Options struct {
	// Config is the parsed, validated flags.
	Config config.Config
	// REST reaches the API server.
	REST *rest.Config
	// Log is the root logger.
	Log logr.Logger
	// NewRouter builds the Router; nil means controller.NoopRouter.
	NewRouter func(RouterDeps) (controller.Router, error)
	// Clock defaults to the real one; tests inject a fake.
	Clock clock.Clock
	// Metrics are registered into controller-runtime's registry when nil;
	// tests pass their own (already registered or not) to run many managers.
	Metrics *metrics.Metrics
	// MaxConcurrentReconciles is how many ManagedWorkloads are reconciled
	// at once; 0 means DefaultConcurrency.
	MaxConcurrentReconciles int
	// SkipNameValidation lets a test process build more than one manager.
	SkipNameValidation bool
	// KindRecheck is how often --target-kinds kinds not served at start
	// are looked for again; zero is controller.DefaultKindRecheck.
	KindRecheck time.Duration
	// LeaderIdentity names this replica in the leader election Lease: its
	// pod's name (POD_NAME), so a restarted container of the same pod takes
	// the lease back at once instead of waiting out the lease it held.
	// Empty: controller-runtime's host name and a random suffix.
	LeaderIdentity string
}

// DefaultConcurrency: reconciles wait on the API server, not the CPU, so a
// few run at once; 8 keeps a burst of pauses short without flooding it.
const DefaultConcurrency = 8

// Scheme returns a scheme with the built-in types and Napwake's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), napwakev1alpha1.AddToScheme(s)); err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	return s, nil
}

// RESTConfig finds the cluster: in-cluster, else $KUBECONFIG or ~/.kube/config.
func RESTConfig() (*rest.Config, error) {
	c, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding the cluster: %w", err)
	}
	return c, nil
}

// New builds the manager with every controller registered.
func New(opts Options) (ctrl.Manager, error) {
	cfg := opts.Config
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	ctrl.SetLogger(opts.Log)
	concurrency := opts.MaxConcurrentReconciles
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	syncPeriod := 10 * time.Hour // informers' resync; the reconciler requeues itself within cfg.SyncPeriod
	lock, err := leaderLock(opts, cfg)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(opts.REST, ctrl.Options{
		Scheme:                              scheme,
		Logger:                              opts.Log,
		Metrics:                             metricsserver.Options{BindAddress: cfg.MetricsBindAddress},
		HealthProbeBindAddress:              cfg.HealthProbeBindAddress,
		PprofBindAddress:                    cfg.PprofBindAddress,
		LeaderElection:                      cfg.LeaderElect,
		LeaderElectionID:                    LeaderElectionID,
		LeaderElectionNamespace:             cfg.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel:       true,
		LeaderElectionResourceLockInterface: lock,
		Cache:                               cache.Options{SyncPeriod: &syncPeriod, NewInformer: rewatch.NewInformer(opts.Log.WithName("rewatch"))},
		Controller:                          crconfig.Controller{SkipNameValidation: &opts.SkipNameValidation, MaxConcurrentReconciles: concurrency},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := errors.Join(mgr.AddHealthzCheck("healthz", healthz.Ping), mgr.AddReadyzCheck("readyz", healthz.Ping)); err != nil {
		return nil, fmt.Errorf("adding health checks: %w", err)
	}

	m := opts.Metrics
	if m == nil {
		m = metrics.New()
		if !cfg.PerWorkloadMetrics {
			m.Workloads = nil
		}
		// Only the leader's counts are whole, and one replica reporting
		// each workload keeps sum() right.
		m.Workloads.OnlyWhenElected(mgr.Elected())
		if err := m.Register(crmetrics.Registry, mgr.GetClient(), opts.Clock); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}

	newRouter := opts.NewRouter
	if newRouter == nil {
		newRouter = func(RouterDeps) (controller.Router, error) { return controller.NoopRouter{}, nil }
	}
	router, err := newRouter(RouterDeps{Manager: mgr, Config: cfg, Clock: opts.Clock, Metrics: m})
	if err != nil {
		return nil, fmt.Errorf("building the router: %w", err)
	}
	if err := router.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the router: %w", err)
	}

	// Every index, once, before the controllers that list by it.
	if err := controller.IndexManagedWorkloads(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	if err := controller.IndexPods(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(opts.REST)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	activityQueries, err := queries(cfg, opts.Clock)
	if err != nil {
		return nil, err
	}
	mwr := &controller.ManagedWorkloadReconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Clock:            opts.Clock,
		Recorder:         mgr.GetEventRecorder("napwake-operator"),
		Router:           router,
		Metrics:          m,
		Usage:            &controller.MetricsAPIUsage{Reader: mgr.GetAPIReader(), Discovery: dc, Clock: opts.Clock},
		Queries:          activityQueries,
		DefaultIdleAfter: cfg.DefaultIdleAfter,
		SyncPeriod:       cfg.SyncPeriod,
		SuspendCronJobs:  cfg.SuspendCronJobs,
		TargetKinds:      cfg.ParsedTargetKinds(),
		KindRecheck:      opts.KindRecheck,
	}
	if cfg.KEDA {
		mwr.KEDA = &controller.KEDA{Reader: mgr.GetCache(), Mapper: mgr.GetRESTMapper(), Clock: opts.Clock}
	}
	defaults := settings.Defaults{IdleAfter: cfg.DefaultIdleAfter, Wake: cfg.DefaultWake}
	mwr.KindServed = func(gvk schema.GroupVersionKind) error { return setUpOptIn(mgr, gvk, defaults) }
	if err := mwr.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ManagedWorkload controller: %w", err)
	}
	optIn := []schema.GroupVersionKind{appsv1.SchemeGroupVersion.WithKind(string(napwakev1alpha1.KindDeployment)), appsv1.SchemeGroupVersion.WithKind(string(napwakev1alpha1.KindStatefulSet))}
	for _, gvk := range cfg.ParsedTargetKinds() {
		// Only a kind served now can be watched; the label opt-in of one
		// served later is set up then (KindServed, above).
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			optIn = append(optIn, gvk)
		}
	}
	for _, gvk := range optIn {
		if err := setUpOptIn(mgr, gvk, defaults); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// setUpOptIn adds the label opt-in controller of kind gvk to mgr, started
// or not.
func setUpOptIn(mgr ctrl.Manager, gvk schema.GroupVersionKind, defaults settings.Defaults) error {
	r := &controller.OptInReconciler{Client: mgr.GetClient(), GVK: gvk, Defaults: defaults, Recorder: mgr.GetEventRecorder("napwake-operator")}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the %s opt-in controller: %w", gvk.Kind, err)
	}
	return nil
}

// leaderLock is the leader election Lease named by opts.LeaderIdentity, or
// nil (controller-runtime's own) when it is empty. Only one container of a
// pod runs at a time, so the pod's name never names two live replicas.
func leaderLock(opts Options, cfg config.Config) (resourcelock.Interface, error) {
	if !cfg.LeaderElect || opts.LeaderIdentity == "" {
		return nil, nil
	}
	cs, err := kubernetes.NewForConfig(opts.REST)
	if err != nil {
		return nil, fmt.Errorf("creating a client for the leader election: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, cfg.LeaderElectionNamespace, LeaderElectionID,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: opts.LeaderIdentity})
	if err != nil {
		return nil, fmt.Errorf("creating the leader election lock: %w", err)
	}
	return lock, nil
}

// apiRetry is how often a starting operator asks an unreachable API server
// again, and how long each try may take.
const apiRetry = time.Second

// WaitForAPIServer returns once the API server answers and serves
// ManagedWorkloads, or when ctx ends. An operator that starts while the API
// server is away (one that lost its lease during an outage restarts into
// it) waits here rather than exiting: exiting again would put its pod in
// CrashLoopBackOff, whose 10, 20, 40 s back-off would hold up every wake
// well past the API server's return. A kube-apiserver just started answers
// /version before it serves the custom resources it has (on the test bed,
// for about a second), so it asks for napwake.dev's resources, not only
// for the version.
func WaitForAPIServer(ctx context.Context, cfg *rest.Config, log logr.Logger) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = apiRetry
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return fmt.Errorf("creating a discovery client: %w", err)
	}
	var logged string
	err = wait.PollUntilContextCancel(ctx, apiRetry, true, func(context.Context) (bool, error) {
		err := servesManagedWorkloads(dc)
		if err != nil && err.Error() != logged {
			log.Info("Waiting for the API server", "error", err.Error())
			logged = err.Error()
		}
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server: %w", err)
	}
	return nil
}

// servesManagedWorkloads says why the API server cannot be used yet, or nil.
func servesManagedWorkloads(dc discovery.DiscoveryInterface) error {
	if _, err := dc.ServerVersion(); err != nil {
		return err
	}
	rl, err := dc.ServerResourcesForGroupVersion(napwakev1alpha1.GroupVersion.String())
	if err != nil {
		return fmt.Errorf("the API server does not serve %s yet (is the CRD installed?): %w", napwakev1alpha1.GroupVersion, err)
	}
	for _, r := range rl.APIResources {
		if r.Name == "managedworkloads" {
			return nil
		}
	}
	return fmt.Errorf("the API server serves %s without managedworkloads (is the CRD installed?)", napwakev1alpha1.GroupVersion)
}

// Run waits for the API server, builds the manager and runs it until ctx
// ends.
func Run(ctx context.Context, opts Options) error {
	if err := WaitForAPIServer(ctx, opts.REST, opts.Log); err != nil {
		return err
	}
	mgr, err := New(opts)
	if err != nil {
		return err
	}
	opts.Log.Info("Starting", "leaderElect", opts.Config.LeaderElect, "doormanService", opts.Config.DoormanService, "negForwarder", opts.Config.NEGForwarder, "keda", opts.Config.KEDA, "suspendCronJobs", opts.Config.SuspendCronJobs, "forwarderImage", opts.Config.ForwarderImageIfOn())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// queries is the Prometheus activity-query client behind its answer cache,
// with --prometheus-http-config's TLS, credentials and headers, or nil (a
// nil interface, not a nil pointer) when --prometheus-url is empty.
func queries(cfg config.Config, clk clock.PassiveClock) (controller.Queries, error) {
	if cfg.PrometheusURL == "" {
		return nil, nil
	}
	hc, err := cfg.PrometheusHTTPClientConfig()
	if err != nil {
		return nil, err
	}
	c, err := promquery.New(cfg.PrometheusURL, hc)
	if err != nil {
		return nil, err
	}
	return promquery.NewCache(c, clk), nil
}
