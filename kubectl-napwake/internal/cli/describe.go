package cli

import (
	"context"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/kubectl-napwake/internal/render"
)

func newDescribeCommand(o *Options) *cobra.Command {
	var out *outputFlags
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show one workload's clock, routes, why it is not routed, dependencies and recent events",
		Args:  exactlyOneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.runDescribe(cmd.Context(), args[0], out)
		},
	}
	out = addOutputFlags(cmd, false)
	return cmd
}

func (o *Options) runDescribe(ctx context.Context, name string, out *outputFlags) error {
	s, mw, err := o.getWorkload(ctx, name)
	if err != nil {
		return err
	}
	if !out.table() {
		return out.printObject(o, mw)
	}
	events, err := s.eventsAbout(ctx, mw)
	if err != nil {
		if _, down := unreachable(err); down {
			return s.explain(ctx, err, request{doing: "listing events"})
		}
		// Without permission to read events the rest still describes it.
		events = nil
	}
	render.DescribeWith(o.IO.Out, mw, events, s.dependenciesOf(ctx, mw), o.renderOptions(false))
	return nil
}

// dependenciesOf reads the ManagedWorkloads mw depends on, declared and
// learned, keyed "namespace/name": nil for one that does not exist, left out
// for one it may not read (another namespace), so describe shows no state.
func (s *session) dependenciesOf(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) map[string]*napwakev1alpha1.ManagedWorkload {
	out := map[string]*napwakev1alpha1.ManagedWorkload{}
	var keys []client.ObjectKey
	for _, d := range mw.Spec.Dependencies {
		ns := d.Namespace
		if ns == "" {
			ns = mw.Namespace
		}
		keys = append(keys, client.ObjectKey{Namespace: ns, Name: d.Name})
	}
	if l := mw.Status.Dependencies; l != nil {
		for _, d := range l.Learned {
			keys = append(keys, client.ObjectKey{Namespace: d.Namespace, Name: d.Name})
		}
	}
	for _, k := range keys {
		if _, done := out[k.String()]; done || len(out) >= maxDescribedDependencies {
			continue
		}
		dep := &napwakev1alpha1.ManagedWorkload{}
		switch err := s.c.Get(ctx, k, dep); {
		case err == nil:
			out[k.String()] = dep
		case apierrors.IsNotFound(err):
			out[k.String()] = nil
		}
	}
	return out
}

// maxDescribedDependencies bounds the reads describe makes for one workload.
const maxDescribedDependencies = 32

// getWorkload connects and reads the ManagedWorkload name in the namespace.
func (o *Options) getWorkload(ctx context.Context, name string) (*session, *napwakev1alpha1.ManagedWorkload, error) {
	s, err := o.connect()
	if err != nil {
		return nil, nil, err
	}
	mw := &napwakev1alpha1.ManagedWorkload{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, mw); err != nil {
		return nil, nil, s.explain(ctx, err, s.read("getting ManagedWorkload "+name, name))
	}
	mw.SetGroupVersionKind(napwakev1alpha1.GroupVersion.WithKind("ManagedWorkload"))
	return s, mw, nil
}

// eventsAbout lists the events on mw and on its target workload.
func (s *session) eventsAbout(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) ([]corev1.Event, error) {
	var all []corev1.Event
	names := []string{mw.Name}
	if mw.Spec.TargetRef.Name != mw.Name {
		names = append(names, mw.Spec.TargetRef.Name)
	}
	for _, n := range names {
		var l corev1.EventList
		if err := s.c.List(ctx, &l, client.InNamespace(mw.Namespace), client.MatchingFields{"involvedObject.name": n}); err != nil {
			return nil, err
		}
		all = append(all, l.Items...)
	}
	return all, nil
}
