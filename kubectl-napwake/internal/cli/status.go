package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/kubectl-napwake/internal/render"
)

// outputFlags are -o and its template flags, from cli-runtime; "" and "wide"
// mean the plugin's own table.
type outputFlags struct {
	print *genericclioptions.PrintFlags
	// formats are those -o takes, for its help and its error.
	formats []string
	// wide says -o wide is the plugin's wider table.
	wide bool
}

func addOutputFlags(cmd *cobra.Command, wide bool) *outputFlags {
	f := &outputFlags{print: genericclioptions.NewPrintFlags("").WithTypeSetter(scheme)}
	f.print.AddFlags(cmd)
	formats := append([]string{}, f.print.AllowedFormats()...)
	if wide {
		formats = append([]string{"wide"}, formats...)
	}
	cmd.Flags().Lookup("output").Usage = "Output format. One of: (" + strings.Join(formats, ", ") + "). Default: a table."
	f.formats, f.wide = formats, wide
	return f
}

func (f *outputFlags) format() string { return *f.print.OutputFormat }

// table is true when the plugin prints its own text rather than an object.
func (f *outputFlags) table() bool { return f.format() == "" || f.wide && f.format() == "wide" }

// check refuses an unknown -o before the cluster is contacted.
func (f *outputFlags) check() error {
	if f.table() {
		return nil
	}
	if _, err := f.print.ToPrinter(); err != nil {
		if genericclioptions.IsNoCompatiblePrinterError(err) {
			return usageErrorf("-o/--output %q is not a format %s prints: use one of %s", f.format(), "this command", strings.Join(f.formats, ", "))
		}
		return usageErrorf("-o/--output %s: %v", f.format(), err)
	}
	return nil
}

// printObject prints obj with the printer -o named.
func (f *outputFlags) printObject(o *Options, obj runtime.Object) error {
	p, err := f.print.ToPrinter()
	if err != nil {
		return userErrorf("%v", err)
	}
	return p.PrintObj(obj, o.IO.Out)
}

func (o *Options) renderOptions(wide bool) render.Options {
	return render.Options{
		NoHeaders:     o.noHeaders,
		Now:           o.Clock.Now(),
		Color:         o.IsTerminal(o.IO.Out),
		Wide:          wide,
		AllNamespaces: o.allNamespaces,
	}
}

func newStatusCommand(o *Options) *cobra.Command {
	var out *outputFlags
	var selector string
	var watch bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List managed workloads: phase, idle or paused for, last woken by; what needs attention",
		Long: `List every ManagedWorkload in the namespace (-A: in every namespace; -l: those
the selector picks) with its phase, target, the replicas a wake restores, how
long it has been idle or paused, what last woke it and when it last resumed.
Then: the workloads that need attention (routing problems, including those
kept from the last pause, and InvalidSetting events), those that turned
requests away this pause, and the replica-hours paused so far.

--no-headers prints the table's rows alone, for scripts. -w/--watch prints it
again each time a ManagedWorkload in scope changes, until interrupted.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("%s takes no NAME (got %q): use -l SELECTOR to pick workloads, or describe NAME", cmd.CommandPath(), args[0])
			}
			if err := out.check(); err != nil {
				return err
			}
			sel, err := parseSelector(selector)
			if err != nil {
				return err
			}
			if !watch {
				return o.runStatus(cmd.Context(), out, sel)
			}
			return o.watchStatus(cmd.Context(), out, sel)
		},
	}
	out = addOutputFlags(cmd, true)
	addSelectorFlag(cmd, &selector)
	addNoHeadersFlag(cmd, o)
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "After printing, print again each time a ManagedWorkload in scope changes, until interrupted.")
	return cmd
}

// addNoHeadersFlag adds --no-headers, for the commands that print a table.
func addNoHeadersFlag(cmd *cobra.Command, o *Options) {
	cmd.Flags().BoolVar(&o.noHeaders, "no-headers", false, "Print the table's rows only: no header line, and nothing below the table.")
}

// parseSelector reads -l; "" selects everything.
func parseSelector(selector string) (labels.Selector, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, usageErrorf("-l/--selector %q: %v", selector, err)
	}
	return sel, nil
}

// listWorkloads connects and lists the ManagedWorkloads in scope: the
// namespace, or every namespace with -A, that sel matches (nil: all).
func (o *Options) listWorkloads(ctx context.Context, sel labels.Selector) (*session, []client.ListOption, *napwakev1alpha1.ManagedWorkloadList, error) {
	s, err := o.connect()
	if err != nil {
		return nil, nil, nil, err
	}
	scope, list, err := o.list(ctx, s, sel)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, scope, list, nil
}

// scope is where listWorkloads looks: the namespace unless -A.
func (o *Options) scope(s *session) []client.ListOption {
	if o.allNamespaces {
		return nil
	}
	return []client.ListOption{client.InNamespace(s.namespace)}
}

func (o *Options) list(ctx context.Context, s *session, sel labels.Selector) ([]client.ListOption, *napwakev1alpha1.ManagedWorkloadList, error) {
	scope := o.scope(s)
	req := s.read("listing ManagedWorkloads", "")
	if o.allNamespaces {
		req.namespace = ""
	}
	opts := scope
	if sel != nil && !sel.Empty() {
		opts = append(append([]client.ListOption{}, scope...), client.MatchingLabelsSelector{Selector: sel})
	}
	var list napwakev1alpha1.ManagedWorkloadList
	if err := s.c.List(ctx, &list, opts...); err != nil {
		return nil, nil, s.explain(ctx, err, req)
	}
	return scope, &list, nil
}

func (o *Options) runStatus(ctx context.Context, out *outputFlags, sel labels.Selector) error {
	s, scope, list, err := o.listWorkloads(ctx, sel)
	if err != nil {
		return err
	}
	return o.printStatus(ctx, out, s, scope, list)
}

// printStatus prints list as -o asks: the plugin's table, or the objects.
func (o *Options) printStatus(ctx context.Context, out *outputFlags, s *session, scope []client.ListOption, list *napwakev1alpha1.ManagedWorkloadList) error {
	if !out.table() {
		for i := range list.Items {
			list.Items[i].SetGroupVersionKind(napwakev1alpha1.GroupVersion.WithKind("ManagedWorkload"))
		}
		return out.printObject(o, list)
	}
	// InvalidSetting events feed "Needs attention". Someone who may read
	// ManagedWorkloads but not events still gets the rest of the status.
	var events corev1.EventList
	if err := s.c.List(ctx, &events, append(scope, client.MatchingFields{"reason": napwakev1alpha1.EventInvalidSetting})...); err != nil {
		if _, down := unreachable(err); down {
			return s.explain(ctx, err, request{doing: "listing events"})
		}
		events.Items = nil
	}
	render.Status(o.IO.Out, list.Items, events.Items, s.namespace, o.renderOptions(out.format() == "wide"))
	return nil
}
