// Command forwarder is Napwake's NEG forwarder. While a workload whose Service
// is in GKE network endpoint groups is paused, the operator runs it in the
// workload's namespace, where GKE accepts its pods as endpoints, and it
// passes every connection, bytes untouched, to the doorman.
//
// Shutdown, like the doorman's (docs/design/doorman.md#the-neg-forwarder):
// on SIGTERM /readyz fails at once, so the endpoints move away;
// it serves fully for 15 s more, then closes its listeners and gives open
// connections 25 s to finish before closing them. The operator's Deployment
// gives it 45 s (terminationGracePeriodSeconds) after a 5 s preStop sleep.
//
// It must not hold logic beyond flags, the relay and its shutdown.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"napwake.dev/forwarder/internal/relay"
	"napwake.dev/shared/buildinfo"
	"napwake.dev/shared/logging"
	"napwake.dev/shared/signals"
	"napwake.dev/shared/version"
)

// Shutdown periods; variables only so a test of main could shorten them.
var (
	serveWhileStopping  = 15 * time.Second
	finishWhileStopping = 25 * time.Second
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "forwarder:", err)
		os.Exit(1)
	}
}

// mappings collects repeated --forward flags.
type mappings []relay.Mapping

func (m *mappings) String() string { return fmt.Sprint(*m) }
func (m *mappings) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		mp, err := relay.ParseMapping(part)
		if err != nil {
			return err
		}
		*m = append(*m, mp)
	}
	return nil
}

func run(args []string) error {
	fs := flag.NewFlagSet("forwarder", flag.ContinueOnError)
	var (
		maps        mappings
		doormanHost = fs.String("doorman-host", "napwake-doorman-pods.napwake-system.svc", "the doorman's headless Service (or an address)")
		probeAddr   = fs.String("health-probe-bind-address", ":8081", "address of /healthz, /readyz and /metrics")
		idleTimeout = fs.Duration("idle-timeout", relay.DefaultIdleTimeout, "close a relayed connection that carries nothing either way for this long")
		showVersion = fs.Bool("version", false, "print the version and exit")
		logOpts     logging.Options
	)
	fs.Var(&maps, "forward", "LISTEN=DOORMAN port pairs, repeatable or comma-separated, such as 8080=20017")
	logOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	info := version.Get("forwarder")
	if *showVersion {
		fmt.Println(info)
		return nil
	}
	log, err := logging.New(os.Stderr, logOpts)
	if err != nil {
		return err
	}
	if len(maps) == 0 {
		return errors.New("nothing to forward: give at least one --forward LISTEN=DOORMAN")
	}
	log.Info("Starting", "version", info.Version, "commit", info.Commit, "doormanHost", *doormanHost, "forward", maps.String())

	ctx := signals.Context(context.Background())
	r := &relay.Relay{DoormanHost: *doormanHost, Mappings: maps, IdleTimeout: *idleTimeout, Log: log}
	var stopping atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, req *http.Request) {
		if stopping.Load() {
			http.Error(w, "stopping", http.StatusServiceUnavailable)
			return
		}
		// Ready only while the doorman answers on every forwarded port.
		if err := r.Ready(req.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// /metrics on the probe port: napwake_build_info and the Go runtime's
	// own, so a PodMonitor can tell which release the forwarders run.
	mux.Handle("/metrics", metricsHandler(info))
	probes := &http.Server{Addr: *probeAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := probes.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "Serving probes")
		}
	}()
	if _, err := r.Listen(); err != nil {
		_ = probes.Close()
		return err
	}
	<-ctx.Done()
	stopping.Store(true)
	log.Info("Stopping: not Ready, serving for 15 s, then 25 s to finish")
	time.Sleep(serveWhileStopping)
	finish, cancel := context.WithTimeout(context.Background(), finishWhileStopping)
	defer cancel()
	r.Shutdown(finish)
	_ = probes.Shutdown(finish)
	log.Info("Stopped")
	return nil
}

// metricsHandler serves a registry of napwake_build_info and the Go and
// process collectors.
func metricsHandler(info version.Info) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(buildinfo.Collector(info), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
