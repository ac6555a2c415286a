package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// completeTimeout bounds the one list a completion makes: a shell waits on it.
const completeTimeout = 5 * time.Second

// completeNames offers the ManagedWorkloads of the namespace (-n, else the
// context's) as the NAME of wake, pause, describe and forecast, leaving out
// those already given (forecast takes only one). Any error offers nothing: a
// completion must never print one into the shell.
func (o *Options) completeNames(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 && !strings.HasSuffix(cmd.Use, "...") {
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
		if strings.HasPrefix(mw.Name, prefix) && !slices.Contains(args, mw.Name) {
			out = append(out, cobra.CompletionWithDesc(mw.Name, string(mw.Status.Phase)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeNamespaces offers the cluster's namespaces for -n/--namespace.
// Any error offers nothing, as for names.
func (o *Options) completeNamespaces(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	s, err := o.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completeTimeout)
	defer cancel()
	var list corev1.NamespaceList
	if err := s.c.List(ctx, &list); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, ns := range list.Items {
		if strings.HasPrefix(ns.Name, prefix) {
			out = append(out, ns.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
