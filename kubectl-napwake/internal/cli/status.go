package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
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
}

func addOutputFlags(cmd *cobra.Command, wide bool) *outputFlags {
	f := &outputFlags{print: genericclioptions.NewPrintFlags("").WithTypeSetter(scheme)}
	f.print.AddFlags(cmd)
	formats := append([]string{}, f.print.AllowedFormats()...)
	if wide {
		formats = append([]string{"wide"}, formats...)
	}
	cmd.Flags().Lookup("output").Usage = "Output format. One of: (" + strings.Join(formats, ", ") + "). Default: a table."
	return f
}

func (f *outputFlags) format() string { return *f.print.OutputFormat }

// table is true when the plugin prints its own text rather than an object.
func (f *outputFlags) table() bool { return f.format() == "" || f.format() == "wide" }

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
		Now:           o.Clock.Now(),
		Color:         o.IsTerminal(o.IO.Out),
		Wide:          wide,
		AllNamespaces: o.allNamespaces,
	}
}

func newStatusCommand(o *Options) *cobra.Command {
	var out *outputFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List managed workloads: phase, idle or paused for, last woken by; what needs attention",
		Long: `List every ManagedWorkload in the namespace (-A: in every namespace) with its
phase, target, the replicas a wake restores, how long it has been idle or
paused, what last woke it and when it last resumed. Then: the workloads that
need attention (routing problems, including those kept from the last pause,
and InvalidSetting events), those that turned requests away this pause, and
the replica-hours paused so far.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.runStatus(cmd.Context(), out)
		},
	}
	out = addOutputFlags(cmd, true)
	return cmd
}

// listWorkloads connects and lists the ManagedWorkloads in scope: the
// namespace, or every namespace with -A.
func (o *Options) listWorkloads(ctx context.Context) (*session, []client.ListOption, *napwakev1alpha1.ManagedWorkloadList, error) {
	s, err := o.connect()
	if err != nil {
		return nil, nil, nil, err
	}
	var scope []client.ListOption
	req := s.read("listing ManagedWorkloads", "")
	if o.allNamespaces {
		req.namespace = ""
	} else {
		scope = append(scope, client.InNamespace(s.namespace))
	}
	var list napwakev1alpha1.ManagedWorkloadList
	if err := s.c.List(ctx, &list, scope...); err != nil {
		return nil, nil, nil, s.explain(ctx, err, req)
	}
	return s, scope, &list, nil
}

func (o *Options) runStatus(ctx context.Context, out *outputFlags) error {
	s, scope, list, err := o.listWorkloads(ctx)
	if err != nil {
		return err
	}
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
