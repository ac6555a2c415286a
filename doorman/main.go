// Command doorman is Napwake's TCP proxy for paused workloads: it holds the
// first connection, wakes the workload, and passes the connection through
// once a pod is Ready.
//
// Shutdown order (docs/design/doorman.md#when-a-doorman-pod-stops):
//  1. SIGTERM: /readyz fails at once, so the operator moves routes away.
//  2. 15 s of full service: the operator may be restarting too.
//  3. Listeners close; open connections get 25 s to finish, then close.
//  4. The Kubernetes machinery (informers, turned-away flush) stops last,
//     so held connections can still be passed on during step 3; this last
//     bookkeeping takes at most 3 s (kube.FinalFlush).
//
// So the doorman exits at most 43 s after SIGTERM (stopsWithin). The
// chart's terminationGracePeriodSeconds (55 s after a 5 s preStop sleep)
// keeps at least 5 s more than that as a margin, and refuses a grace period
// that does not.
//
// It must not hold logic beyond the wiring and the shutdown order written
// below.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/addr"
	"napwake.dev/doorman/internal/config"
	"napwake.dev/doorman/internal/kube"
	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/shared/logging"
	"napwake.dev/shared/memlimit"
	"napwake.dev/shared/signals"
	"napwake.dev/shared/version"
)

// Shutdown periods: 15 s of full service, then 25 s for open connections
// to finish (docs/design/doorman.md#when-a-doorman-pod-stops); variables only so the test of main
// can shorten them. The last bookkeeping (the turned-away flush,
// kube.FinalFlush, alongside the HTTP servers' second) comes after, so the
// pod exits within stopsWithin of SIGTERM, and the chart's grace period
// (the preStop sleep, then stopsWithin and a margin of at least 5 s) never
// cuts it short.
var (
	serveWhileStopping  = 15 * time.Second
	finishWhileStopping = 25 * time.Second
	turnedAwayEvery     = time.Minute
)

// stopsWithin bounds the time from SIGTERM to exit: the two periods and
// the last bookkeeping. charts/napwake's grace period is checked against
// it (the chart's _helpers.tpl and e2e/chart).
const stopsWithin = 15*time.Second + 25*time.Second + kube.FinalFlush

func main() {
	memlimit.Set() // before anything allocates much
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "doorman:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	return runUntil(signals.Context(context.Background()), args)
}

// runUntil runs the doorman until stop ends, then shuts down in order.
func runUntil(stop context.Context, args []string) error {
	var cfg config.Config
	fs := flag.NewFlagSet("doorman", flag.ContinueOnError)
	cfg.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Version {
		fmt.Println(version.Get("doorman").String())
		return nil
	}
	// Every value that cannot work is named at once, the environment's
	// with the flags'.
	if err := errors.Join(cfg.LoadEnv(os.Getenv), cfg.Validate()); err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, cfg.Logging)
	if err != nil {
		return err
	}
	log.Info("Starting", "version", version.Get("doorman").String(), "pod", cfg.PodName)
	// controller-runtime's cache and client-go log through these: without
	// them their lines are dropped (controller-runtime warns once and says
	// nothing more) or written in klog's own format.
	crlog.SetLogger(log)
	klog.SetLogger(log)

	restCfg, err := ctrlconfig.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the Kubernetes client config: %w", err)
	}
	// Wakes and activity are stamped with the API server's time, learnt
	// from the Date of every answer, not this node's clock.
	serverClock := kube.NewServerClock(clock.RealClock{})
	restCfg.Wrap(serverClock.Wrap)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	if err := napwakev1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	cache, err := kube.NewCache(restCfg, scheme, log.WithName("rewatch"))
	if err != nil {
		return fmt.Errorf("creating the informer cache: %w", err)
	}
	c, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("creating the Kubernetes clientset: %w", err)
	}
	broadcaster := record.NewBroadcaster()
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "napwake-doorman", Host: cfg.PodName})

	m := metrics.New()
	table := proxy.NewTable()
	hooks := kube.NewHooks(c, recorder, serverClock, log.WithName("hooks")).ReadFirstFrom(cache)
	var wakeKey *kube.WakeKey
	var keys proxy.Keys
	if cfg.WakeKeySecret != "" {
		wakeKey = kube.NewWakeKey(c, cfg.PodNamespace, cfg.WakeKeySecret, clock.RealClock{}, rand.Reader, log.WithName("wake-key"))
		keys = wakeKey
	}
	copyMode, err := proxy.ParseCopyMode(cfg.Copy)
	if err != nil {
		return err // Validate refused it first; kept for the compiler's sake
	}
	srv := proxy.New(proxy.Config{
		Keys:          keys,
		ListenAddress: cfg.ListenAddress,
		Rules:         addr.Rules{Self: cfg.PodIPs},
		ExtraAgents:   cfg.Agents(),
		Limits:        proxy.DefaultLimits(),
		SocketBuffer:  socketBuffer(cfg.PassSocketBuffer),
		Copy:          copyMode,
	}, table, hooks, m)
	m.ObserveTables(proxy.TableNames, srv.TableSizes)
	watcher := kube.NewWatcher(cache, table, srv, addr.Rules{Self: cfg.PodIPs})
	watcher.OnConflict = hooks.RouteConflict

	// The data path and the Kubernetes machinery run under runCtx, which
	// ends only after the shutdown sequence.
	runCtx, cancelRun := context.WithCancel(logr.NewContext(context.Background(), log))
	defer cancelRun()
	srv.Start(runCtx)

	var ready, stopping atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	goRun := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	goRun("informer cache", func() error { return cache.Start(runCtx) })
	goRun("watcher", func() error {
		go func() {
			// Ready once every routed port listens, not when the caches
			// sync: the routes are set after that, by the watcher.
			select {
			case <-watcher.Synced():
				ready.Store(true)
			case <-runCtx.Done():
			}
		}()
		return watcher.Run(runCtx)
	})
	if wakeKey != nil {
		goRun("wake key", func() error { wakeKey.Run(runCtx, clock.RealClock{}); return nil })
	}
	goRun("turned-away", func() error { hooks.RunTurnedAway(runCtx, clock.RealClock{}, turnedAwayEvery); return nil })

	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	health.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if stopping.Load() || !ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	servers := []*http.Server{
		{Addr: cfg.HealthProbeBindAddress, Handler: health, ReadHeaderTimeout: 5 * time.Second},
		{Addr: cfg.MetricsBindAddress, Handler: metricsMux(m), ReadHeaderTimeout: 5 * time.Second},
	}
	for _, s := range servers {
		goRun("serving "+s.Addr, s.ListenAndServe)
	}

	var runErr error
	select {
	case <-stop.Done():
		log.Info("Stopping: not Ready", "servingFor", serveWhileStopping.String(), "thenFinishingWithin", finishWhileStopping.String())
	case runErr = <-errs:
		log.Error(runErr, "Stopping")
	}
	srv.Stop(func() { stopping.Store(true) }, serveWhileStopping, finishWhileStopping)
	log.Info("Closed every connection; flushing the turned-away counts", "within", kube.FinalFlush.String())
	cancelRun()
	// One second for both servers together, within the flush's bound.
	sctx, cancelServers := context.WithTimeout(context.Background(), time.Second)
	for _, s := range servers {
		_ = s.Shutdown(sctx)
	}
	cancelServers()
	wg.Wait()
	log.Info("Stopped")
	return runErr
}

func metricsMux(m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	return mux
}

// socketBuffer maps --pass-socket-buffer to proxy.Config.SocketBuffer,
// where 0 takes the default and a negative value the kernel's autotuning.
func socketBuffer(flag int) int {
	if flag == 0 {
		return -1
	}
	return flag
}
