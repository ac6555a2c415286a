// Command kubectl-napwake is the kubectl plugin for Napwake: `kubectl napwake
// status|wake|pause|describe|forecast|version`. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	_ "time/tzdata" // forecast time zones work on machines without a zoneinfo database

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"napwake.dev/kubectl-napwake/internal/cli"
	"napwake.dev/shared/signals"
)

func main() { os.Exit(run()) }

// run executes the command line and returns the exit code (cli.ExitCode):
// 0; 1 after printing one line saying what went wrong and what to do; 2 for
// a mistake in the command line, found before the cluster is contacted.
func run() int {
	// client-go logs through klog; a plugin prints its own errors, once.
	klog.SetLogger(logr.Discard())
	o := cli.NewOptions()
	cmd := cli.NewCommand(o)
	err := cmd.ExecuteContext(signals.Context(context.Background()))
	if err != nil {
		fmt.Fprintln(o.IO.ErrOut, "error:", err)
	}
	return cli.ExitCode(err)
}
