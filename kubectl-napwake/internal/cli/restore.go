package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/restore"
)

// defaultRestoreTimeout is how long restore waits for a Ready pod of the
// workloads it scaled back, as the chart's pre-delete hook does.
const defaultRestoreTimeout = 90 * time.Second

func newRestoreCommand(o *Options) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Without the operator: scale every paused workload back to its saved replicas and remove Napwake's routes",
		Long: `Lets go of every workload Napwake paused in the namespace (-n), or in
every namespace (-A), as helm uninstall's pre-delete hook does: each paused,
pausing or waking workload is scaled back to the replicas its pause saved,
restore waits up to --timeout for a Ready pod of each, then removes every
EndpointSlice Napwake wrote (so each Service leads to its own pods again) and
Napwake's finalizer from each ManagedWorkload. For a cluster where the
operator is already gone, or was removed without Helm (docs/uninstall.md).

It says what it did for each workload and fails, naming them, if any could
not be restored; running it again does only what is left. A workload whose
pods are not Ready in time is named but not a failure: it is scaled back.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout must be more than 0s, got %s", timeout)
			}
			s, err := o.connect()
			if err != nil {
				return err
			}
			ns := s.namespace
			if o.allNamespaces {
				ns = ""
			}
			ctx := cmd.Context()
			var pods corev1.PodList
			if err := s.c.List(ctx, &pods, client.MatchingLabels{
				napwakev1alpha1.LabelControlPlane: napwakev1alpha1.ControlPlaneOperator,
				napwakev1alpha1.LabelAppName:      napwakev1alpha1.AppName,
			}); err == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil {
						continue // stopping, as the docs' scale to 0 asks
					}
					_, _ = fmt.Fprintf(o.IO.ErrOut, "Warning: the operator is running (pod %s/%s): it may pause these workloads again once they are idle. "+
						"helm uninstall stops it first; or scale it to 0 before restoring.\n", p.Namespace, p.Name)
					break
				}
			}
			report, err := restore.Run(ctx, s.c, restore.Options{Namespace: ns, ReadyTimeout: timeout, Progress: o.IO.Out})
			if err != nil {
				return s.explain(ctx, err, request{doing: "restoring paused workloads", namespace: ns})
			}
			if err := report.Err(); err != nil {
				return err
			}
			_, err = fmt.Fprintln(o.IO.Out, "Done: every paused workload is back at its saved replicas, and no Service leads to the doorman")
			return err
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", defaultRestoreTimeout, "How long to wait for a Ready pod of the workloads scaled back.")
	return cmd
}
