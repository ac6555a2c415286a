// Command operator is Napwake's controller manager: it pauses idle
// Deployments and StatefulSets by scaling them to zero and wakes them on
// activity, routing their Services to the doorman while they sleep.
//
// It must not hold logic: it parses flags and wires the router into the
// manager; everything else is under internal/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/klog/v2"

	"napwake.dev/operator/internal/config"
	"napwake.dev/operator/internal/controller"
	"napwake.dev/operator/internal/manager"
	"napwake.dev/operator/internal/routing"
	"napwake.dev/shared/logging"
	"napwake.dev/shared/memlimit"
	"napwake.dev/shared/signals"
	"napwake.dev/shared/version"
)

const component = "napwake-operator"

func main() {
	memlimit.Set() // before anything allocates much
	if err := run(signals.Context(context.Background()), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "restore" {
		return runRestore(ctx, args[1:], stdout, stderr)
	}
	cfg := config.Default(os.Getenv)
	var logOpts logging.Options
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.BindFlags(fs)
	logOpts.BindFlags(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.Get(component).String())
		return nil
	}
	if err := errors.Join(cfg.Validate(), logOpts.Validate()); err != nil {
		return err
	}
	log, err := logging.New(stderr, logOpts)
	if err != nil {
		return err
	}
	log.Info("Napwake operator", "version", version.Get(component).String())
	klog.SetLogger(log) // client-go's reflectors and leader election; once, before anything runs
	rest, err := manager.RESTConfig()
	if err != nil {
		return err
	}
	return manager.Run(ctx, manager.Options{Config: cfg, REST: rest, Log: log, NewRouter: newRouter, LeaderIdentity: os.Getenv("POD_NAME")})
}

// newRouter builds the Router: the one place routing is wired in. With
// --doorman-service="" it routes nothing, and workloads say
// WakeOnRequest=False DoormanDisabled.
func newRouter(deps manager.RouterDeps) (controller.Router, error) {
	return routing.New(deps.Manager.GetClient(), deps.Manager.GetAPIReader(), routing.Options{
		DoormanService:    deps.Config.DoormanService,
		PortsPerWorkload:  deps.Config.PortsPerWorkload,
		PortsPerNamespace: deps.Config.PortsPerNamespace,
		Metrics:           deps.Metrics,
		Forwarder: routing.ForwarderOptions{
			Image:       deps.Config.ForwarderImageIfOn(),
			Replicas:    int32(deps.Config.ForwarderReplicas), //nolint:gosec // validated 1 to 10
			DoormanHost: deps.Config.ForwarderDoormanHost,
		},
	}, deps.Clock, deps.Manager.GetEventRecorder("napwake-routing"))
}
