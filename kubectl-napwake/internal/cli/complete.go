package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// completeTimeout bounds the one list a completion makes: a shell waits on it.
const completeTimeout = 5 * time.Second

// completeNames offers the ManagedWorkloads of the namespace (-n, else the
// context's) as the NAME of wake, pause, describe and forecast. Any error
// offers nothing: a completion must never print one into the shell.
func (o *Options) completeNames(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	s, err := o.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completeTimeout)
	defer cancel()
	var list napwakev1alpha1.ManagedWorkloadList
	if err := s.c.List(ctx, &list, client.InNamespace(s.namespace)); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, mw := range list.Items {
		if strings.HasPrefix(mw.Name, prefix) {
			out = append(out, cobra.CompletionWithDesc(mw.Name, string(mw.Status.Phase)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
