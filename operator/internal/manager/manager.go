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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
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
	mgr, err := ctrl.NewManager(opts.REST, ctrl.Options{
		Scheme:                        scheme,
		Logger:                        opts.Log,
		Metrics:                       metricsserver.Options{BindAddress: cfg.MetricsBindAddress},
		HealthProbeBindAddress:        cfg.HealthProbeBindAddress,
		LeaderElection:                cfg.LeaderElect,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       cfg.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cache.Options{SyncPeriod: &syncPeriod},
		Controller:                    crconfig.Controller{SkipNameValidation: &opts.SkipNameValidation, MaxConcurrentReconciles: concurrency},
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
	mwr := &controller.ManagedWorkloadReconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Clock:            opts.Clock,
		Recorder:         mgr.GetEventRecorder("napwake-operator"),
		Router:           router,
		Metrics:          m,
		Usage:            &controller.MetricsAPIUsage{Reader: mgr.GetAPIReader(), Discovery: dc, Clock: opts.Clock},
		Queries:          queries(cfg.PrometheusURL, opts.Clock),
		DefaultIdleAfter: cfg.DefaultIdleAfter,
		SyncPeriod:       cfg.SyncPeriod,
	}
	if err := mwr.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ManagedWorkload controller: %w", err)
	}
	defaults := settings.Defaults{IdleAfter: cfg.DefaultIdleAfter, Wake: cfg.DefaultWake}
	for _, kind := range []napwakev1alpha1.TargetKind{napwakev1alpha1.KindDeployment, napwakev1alpha1.KindStatefulSet} {
		r := &controller.OptInReconciler{Client: mgr.GetClient(), Kind: kind, Defaults: defaults, Recorder: mgr.GetEventRecorder("napwake-operator")}
		if err := r.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the %s opt-in controller: %w", kind, err)
		}
	}
	return mgr, nil
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, opts Options) error {
	mgr, err := New(opts)
	if err != nil {
		return err
	}
	opts.Log.Info("Starting", "leaderElect", opts.Config.LeaderElect, "doormanService", opts.Config.DoormanService, "negForwarder", opts.Config.NEGForwarder, "forwarderImage", opts.Config.ForwarderImageIfOn())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// queries is the Prometheus activity-query client behind its answer cache,
// or nil (a nil interface, not a nil pointer) when --prometheus-url is empty.
func queries(url string, clk clock.PassiveClock) controller.Queries {
	if url == "" {
		return nil
	}
	return promquery.NewCache(&promquery.Client{URL: url}, clk)
}
