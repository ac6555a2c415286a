package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"napwake.dev/operator/internal/manager"
	"napwake.dev/shared/restore"
)

// runRestore is `operator restore`, the chart's pre-delete hook: it stops
// the operator, then wakes every paused workload to its saved replicas and
// removes Napwake's EndpointSlices (docs/uninstall.md). It fails, naming
// what is left, when it could not do all of that.
func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("operator restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	namespace := fs.String("namespace", "", "restore only this namespace (default: every namespace)")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the operator to stop, and for a Ready pod of the restored workloads")
	stop := fs.String("stop-operator", "", "the operator's Deployment, namespace/name, to scale to zero first")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("restore takes no arguments, got %q", fs.Args())
	}
	if *timeout <= 0 {
		return fmt.Errorf("--timeout must be more than 0s, got %s", *timeout)
	}
	opts := restore.Options{Namespace: *namespace, ReadyTimeout: *timeout, Progress: stdout}
	if *stop != "" {
		ns, name, ok := strings.Cut(*stop, "/")
		if !ok || ns == "" || name == "" {
			return fmt.Errorf("--stop-operator must be namespace/name, got %q", *stop)
		}
		opts.StopOperator = &types.NamespacedName{Namespace: ns, Name: name}
	}
	rest, err := manager.RESTConfig()
	if err != nil {
		return err
	}
	scheme, err := manager.Scheme()
	if err != nil {
		return err
	}
	c, err := client.New(rest, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connecting to the API server: %w", err)
	}
	report, err := restore.Run(ctx, c, opts)
	if err != nil {
		return err
	}
	if err := report.Err(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Every paused workload is back at its saved replicas, and no Service leads to the doorman")
	return nil
}
