package cli

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/kubectl-napwake/internal/render"
)

func newSavingsCommand(o *Options) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "savings",
		Short: "Replica-hours paused and the CPU and memory requests that freed, per namespace",
		Long: `Sum, per namespace (-A: every namespace), what the pauses of its managed
workloads saved: the replica-hours paused (ended pauses, as the operator
records them in status.savings, plus the pause under way) and the CPU
core-hours and memory GiB-hours those replicas' requests would have held.
Requests are read from the pod template (spec.template) of each workload's
target, whatever its kind; a workload whose target cannot be read, or has
no pod template, counts in replica-hours only, and the table says so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "" && format != "json" {
				return usageErrorf("--output %q is not supported: use json, or leave it out for a table", format)
			}
			return o.runSavings(cmd.Context(), format)
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "", "Output format: json, or a table when unset.")
	addNoHeadersFlag(cmd, o)
	return cmd
}

func (o *Options) runSavings(ctx context.Context, format string) error {
	s, _, list, err := o.listWorkloads(ctx, nil)
	if err != nil {
		return err
	}
	requests := make(map[string]render.Requests, len(list.Items))
	for i := range list.Items {
		mw := &list.Items[i]
		requests[mw.Namespace+"/"+mw.Name] = targetRequests(ctx, s.c, mw)
	}
	rows := render.SavingsOf(list.Items, requests, o.Clock.Now())
	if format == "json" {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	render.Savings(o.IO.Out, rows, o.renderOptions(false))
	return nil
}

// targetRequests reads what one replica of mw's target requests, from its
// pod template (spec.template) whatever its kind: a Deployment's, a
// StatefulSet's, an Argo Rollout's. A target that cannot be read (gone, or
// not readable by this user) is Known false; one read without a pod
// template is NoTemplate (render.RequestsOf).
func targetRequests(ctx context.Context, c client.Client, mw *napwakev1alpha1.ManagedWorkload) render.Requests {
	gvk, err := mw.Spec.TargetRef.GroupVersionKind()
	if err != nil {
		return render.Requests{}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, types.NamespacedName{Namespace: mw.Namespace, Name: mw.Spec.TargetRef.Name}, u); err != nil {
		return render.Requests{}
	}
	return render.RequestsOf(u.Object)
}
