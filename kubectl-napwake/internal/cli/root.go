// Package cli builds the `kubectl napwake` commands: it reads what the
// operator writes on ManagedWorkloads, asks for wakes and pauses through their
// annotations, and hands the objects to package render for printing. Every
// failure a user can cause or meet (unknown workload, wrong namespace, the CRD
// missing, no permission, an unreachable cluster) comes back as one line
// naming what to do.
//
// It must not change anything but the acting annotations wake and pause
// write; reads are for showing.
package cli

import (
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
)

// Options is what every command shares: the kubeconfig flags, the streams,
// the clock, and how to tell a terminal.
type Options struct {
	// ConfigFlags are kubectl's connection flags (-n, --context, --kubeconfig, ...).
	ConfigFlags *genericclioptions.ConfigFlags
	// IO are the streams commands print to.
	IO genericiooptions.IOStreams
	// Clock measures ages and waits; tests fix it.
	Clock clock.WithTicker
	// IsTerminal says whether w is a terminal: colour and the live --wait
	// line only there. Defaults to probing an *os.File, honouring NO_COLOR.
	IsTerminal func(w io.Writer) bool

	allNamespaces bool
	// noHeaders is --no-headers, for the commands that print a table.
	noHeaders bool
}

// NewOptions returns Options for a real run on the process's streams.
func NewOptions() *Options {
	return &Options{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		IO:          genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Clock:       clock.RealClock{},
		IsTerminal:  isTerminal,
	}
}

// isTerminal is true for a terminal, unless NO_COLOR is set (no-color.org).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// defaultRequestTimeout bounds each API call when --request-timeout is not
// given, so a cluster that swallows packets fails in seconds, not minutes.
const defaultRequestTimeout = 30 * time.Second

// NewCommand returns the `kubectl napwake` root command.
func NewCommand(o *Options) *cobra.Command {
	if o.IsTerminal == nil {
		o.IsTerminal = func(io.Writer) bool { return false }
	}
	root := &cobra.Command{
		Use:   "kubectl-napwake",
		Short: "See what Napwake is doing, and wake or pause workloads",
		Long: `kubectl napwake shows the workloads Napwake manages (status, describe,
forecast) and wakes or pauses them (wake, pause) through the annotations the
operator watches, whatever their wake mode says.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl napwake",
		},
	}
	o.ConfigFlags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Every namespace: for status, savings and restore, and with -l for wake, pause and describe.")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErrorf("%v: see %s --help", err, c.CommandPath())
	})
	// Flags every command shares are checked before any command contacts
	// the cluster; each command checks its own the same way.
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return o.checkConfigFlags() }
	if err := root.RegisterFlagCompletionFunc("namespace", o.completeNamespaces); err != nil {
		panic(err) // a programming error: the flag is kubectl's and always there
	}
	root.AddCommand(
		newStatusCommand(o),
		newActCommand(o, wakeAction),
		newActCommand(o, pauseAction),
		newDescribeCommand(o),
		newForecastCommand(o),
		newSavingsCommand(o),
		newVersionCommand(o),
		newRestoreCommand(o),
	)
	// Every command that takes a ManagedWorkload's name completes it; cobra's
	// own `completion bash|zsh|fish|powershell` prints the shell's script.
	for _, c := range root.Commands() {
		if strings.HasSuffix(c.Use, " NAME") || strings.HasSuffix(c.Use, " NAME...") {
			c.ValidArgsFunction = o.completeNames
		}
	}
	return root
}

// checkConfigFlags refuses a kubeconfig flag whose value client-go would
// only refuse once a command connects.
func (o *Options) checkConfigFlags() error {
	if v := o.ConfigFlags.Timeout; v != nil && *v != "" && *v != "0" {
		// client-go's reading: whole seconds, or a duration with its unit.
		if _, err := strconv.Atoi(*v); err != nil {
			d, err := time.ParseDuration(*v)
			if err != nil || d < 0 {
				return usageErrorf("--request-timeout %q is not a duration such as 30s or 2m (0: no limit)", *v)
			}
		} else if strings.HasPrefix(*v, "-") {
			return usageErrorf("--request-timeout %q is not a duration such as 30s or 2m (0: no limit)", *v)
		}
	}
	return nil
}

// exactlyOneName is cobra.ExactArgs(1) with a message that says what to type.
func exactlyOneName(c *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf("%s needs exactly one ManagedWorkload name, e.g. %s api -n preview-42 (got %d arguments)", c.CommandPath(), c.CommandPath(), len(args))
	}
	return nil
}
