package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// targets is what wake, pause and describe act on: ManagedWorkloads named
// on the command line (in the namespace), or those a label selector picks
// (in the namespace, or in every namespace with -A). Exactly one of names
// and selector is set.
type targets struct {
	names    []string
	selector labels.Selector
	// selectorText is -l as given, for messages.
	selectorText string
	// all is -A: only with a selector.
	all bool
}

// managedWorkloadKinds are the words `kind/name` may start with, as kubectl
// spells a resource: singular, plural, short name, and with the group.
var managedWorkloadKinds = []string{"managedworkload", "managedworkloads", "mw", "managedworkload.napwake.dev", "managedworkloads.napwake.dev"}

// parseTargets reads a command's arguments, -l and -A, before the cluster is
// contacted: every mistake is a usage error naming what to type.
func parseTargets(c *cobra.Command, args []string, selector string, all bool) (targets, error) {
	path := c.CommandPath()
	switch {
	case len(args) == 0 && selector == "":
		return targets{}, usageErrorf("%s needs a ManagedWorkload name, several, or -l SELECTOR, e.g. %s api -n preview-42", path, path)
	case len(args) > 0 && selector != "":
		return targets{}, usageErrorf("%s takes names or -l/--selector, not both", path)
	case len(args) > 0 && all:
		return targets{}, usageErrorf("-A/--all-namespaces does not go with a NAME: pass -n NAMESPACE, or -l SELECTOR with -A")
	}
	t := targets{all: all, selectorText: selector}
	if selector != "" {
		sel, err := labels.Parse(selector)
		if err != nil {
			return targets{}, usageErrorf("-l/--selector %q: %v", selector, err)
		}
		t.selector = sel
		return t, nil
	}
	for _, a := range args {
		name, err := parseName(a)
		if err != nil {
			return targets{}, err
		}
		if !slices.Contains(t.names, name) {
			t.names = append(t.names, name)
		}
	}
	return t, nil
}

// parseName reads NAME or KIND/NAME, where KIND must be a ManagedWorkload's.
func parseName(arg string) (string, error) {
	name := arg
	if kind, n, ok := strings.Cut(arg, "/"); ok {
		if !slices.Contains(managedWorkloadKinds, strings.ToLower(kind)) {
			return "", usageErrorf("%q: only ManagedWorkloads can be named here (managedworkload/NAME, mw/NAME or NAME), not %s", arg, kind)
		}
		name = n
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", usageErrorf("%q is not a ManagedWorkload name: %s", arg, strings.Join(errs, "; "))
	}
	return name, nil
}

// keys lists the ManagedWorkloads t names, or those its selector matches
// (sorted by namespace, then name); no match is an error.
func (s *session) keys(ctx context.Context, t targets) ([]client.ObjectKey, error) {
	if t.selector == nil {
		keys := make([]client.ObjectKey, 0, len(t.names))
		for _, n := range t.names {
			keys = append(keys, client.ObjectKey{Namespace: s.namespace, Name: n})
		}
		return keys, nil
	}
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: t.selector}}
	req := s.read("listing ManagedWorkloads matching -l "+t.selectorText, "")
	where := "namespace " + s.namespace
	if t.all {
		req.namespace, where = "", "any namespace"
	} else {
		opts = append(opts, client.InNamespace(s.namespace))
	}
	var list napwakev1alpha1.ManagedWorkloadList
	if err := s.c.List(ctx, &list, opts...); err != nil {
		return nil, s.explain(ctx, err, req)
	}
	if len(list.Items) == 0 {
		return nil, userErrorf("no ManagedWorkloads in %s match -l %s: see their labels with `kubectl get mw --show-labels`", where, t.selectorText)
	}
	keys := make([]client.ObjectKey, 0, len(list.Items))
	for _, mw := range list.Items {
		keys = append(keys, client.ObjectKeyFromObject(&mw))
	}
	slices.SortFunc(keys, func(a, b client.ObjectKey) int { return strings.Compare(a.String(), b.String()) })
	return keys, nil
}

// eachKey runs do for every key, all of them even when some fail, unless
// the cluster cannot be reached at all (then that error, at once). One key's
// error is returned as it is; with several, each failure is printed as an
// error line when it happens and the result names those that failed.
func (o *Options) eachKey(verb string, keys []client.ObjectKey, do func(client.ObjectKey) error) error {
	if len(keys) == 1 {
		return do(keys[0])
	}
	var failed []string
	for _, k := range keys {
		if err := do(k); err != nil {
			if u := (*userError)(nil); errors.As(err, &u) && u.down {
				return err
			}
			fmt.Fprintln(o.IO.ErrOut, "error:", err)
			failed = append(failed, k.String())
		}
	}
	if len(failed) > 0 {
		return userErrorf("%s failed for %d of %d ManagedWorkloads: %s", verb, len(failed), len(keys), strings.Join(failed, ", "))
	}
	return nil
}

// addSelectorFlag adds -l/--selector to cmd.
func addSelectorFlag(cmd *cobra.Command, selector *string) {
	cmd.Flags().StringVarP(selector, "selector", "l", "", "Selector (label query) over ManagedWorkloads, e.g. -l team=web,env!=prod; with -A in every namespace.")
}
