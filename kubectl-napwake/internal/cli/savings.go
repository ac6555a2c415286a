package cli

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
Requests are read from each workload's Deployment or StatefulSet pod
template; a workload whose target cannot be read counts in replica-hours
only, and the table says so.`,
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

// targetRequests reads what one replica of mw's target requests; a target
// that cannot be read (gone, or not readable by this user) is Known false.
func targetRequests(ctx context.Context, c client.Client, mw *napwakev1alpha1.ManagedWorkload) render.Requests {
	key := types.NamespacedName{Namespace: mw.Namespace, Name: mw.Spec.TargetRef.Name}
	var spec *corev1.PodSpec
	if !mw.Spec.TargetRef.IsApps() {
		return render.Requests{} // another kind's template is not read here
	}
	switch mw.Spec.TargetRef.Kind {
	case napwakev1alpha1.KindDeployment:
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, key, d); err != nil {
			return render.Requests{}
		}
		spec = &d.Spec.Template.Spec
	case napwakev1alpha1.KindStatefulSet:
		st := &appsv1.StatefulSet{}
		if err := c.Get(ctx, key, st); err != nil {
			return render.Requests{}
		}
		spec = &st.Spec.Template.Spec
	default:
		return render.Requests{}
	}
	r := render.Requests{Known: true}
	for _, ctr := range spec.Containers {
		if q, ok := ctr.Resources.Requests[corev1.ResourceCPU]; ok {
			r.CPU.Add(q)
		}
		if q, ok := ctr.Resources.Requests[corev1.ResourceMemory]; ok {
			r.Memory.Add(q)
		}
	}
	return r
}
