package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/kubectl-napwake/internal/render"
	"napwake.dev/shared/restore"
)

func newDescribeCommand(o *Options) *cobra.Command {
	var out *outputFlags
	var selector string
	cmd := &cobra.Command{
		Use:   "describe NAME...",
		Short: "Show workloads' clock, routes, why they are not routed, dependencies and recent events",
		Long: `Show each named ManagedWorkload (NAME, managedworkload/NAME or mw/NAME; or
those -l picks, with -A in every namespace): its clock, routes, why it is not
routed, what needs attention, dependencies, conditions and recent events.
With several, each is shown in turn; one that cannot be read is reported and
the others still shown.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTargets(cmd, args, selector, o.allNamespaces)
			if err != nil {
				return err
			}
			if err := out.check(); err != nil {
				return err
			}
			return o.runDescribe(cmd.Context(), t, out)
		},
	}
	out = addOutputFlags(cmd, false)
	addSelectorFlag(cmd, &selector)
	return cmd
}

func (o *Options) runDescribe(ctx context.Context, t targets, out *outputFlags) error {
	s, err := o.connect()
	if err != nil {
		return err
	}
	keys, err := s.keys(ctx, t)
	if err != nil {
		return err
	}
	if !out.table() {
		// One object as itself; several as a list, as kubectl get prints them.
		list := &napwakev1alpha1.ManagedWorkloadList{}
		list.SetGroupVersionKind(napwakev1alpha1.GroupVersion.WithKind("ManagedWorkloadList"))
		err := o.eachKey("describe", keys, func(k client.ObjectKey) error {
			mw, err := s.get(ctx, k)
			if err == nil {
				list.Items = append(list.Items, *mw)
			}
			return err
		})
		switch {
		case len(keys) == 1 && err == nil:
			return out.printObject(o, &list.Items[0])
		case len(list.Items) > 0:
			if perr := out.printObject(o, list); perr != nil {
				return perr
			}
		}
		return err
	}
	shown := 0
	return o.eachKey("describe", keys, func(k client.ObjectKey) error {
		mw, err := s.get(ctx, k)
		if err != nil {
			return err
		}
		if shown > 0 {
			fmt.Fprintln(o.IO.Out)
		}
		shown++
		return o.describeOne(ctx, s, mw)
	})
}

// describeOne prints mw, its events and its dependencies.
func (o *Options) describeOne(ctx context.Context, s *session, mw *napwakev1alpha1.ManagedWorkload) error {
	events, err := s.eventsAbout(ctx, mw)
	if err != nil {
		if _, down := unreachable(err); down {
			return s.explain(ctx, err, request{doing: "listing events"})
		}
		// Without permission to read events the rest still describes it.
		events = nil
	}
	around := render.Around{Dependencies: s.dependenciesOf(ctx, mw), Autoscalers: s.autoscalersOf(ctx, mw)}
	render.DescribeWith(o.IO.Out, mw, events, around, o.renderOptions(false))
	return nil
}

// autoscalersOf lists the HorizontalPodAutoscalers and KEDA ScaledObjects
// of mw's namespace whose scaleTargetRef names its target. Those it may not
// list (KEDA not installed, no permission) are left out.
func (s *session) autoscalersOf(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) []render.Autoscaler {
	var out []render.Autoscaler
	var hpas autoscalingv1.HorizontalPodAutoscalerList
	if err := s.c.List(ctx, &hpas, client.InNamespace(mw.Namespace)); err == nil {
		for _, h := range hpas.Items {
			ref := h.Spec.ScaleTargetRef
			if render.Scales(ref.APIVersion, ref.Kind, ref.Name, mw.Spec.TargetRef) {
				a := render.Autoscaler{Kind: "HorizontalPodAutoscaler", Name: h.Name, Max: ptr.To(int64(h.Spec.MaxReplicas))}
				if h.Spec.MinReplicas != nil {
					a.Min = ptr.To(int64(*h.Spec.MinReplicas))
				}
				out = append(out, a)
			}
		}
	}
	var sos unstructured.UnstructuredList
	sos.SetGroupVersionKind(restore.ScaledObjectGVK.GroupVersion().WithKind(restore.ScaledObjectGVK.Kind + "List"))
	if err := s.c.List(ctx, &sos, client.InNamespace(mw.Namespace)); err == nil {
		for _, so := range sos.Items {
			str := func(f string) string {
				v, _, _ := unstructured.NestedString(so.Object, "spec", "scaleTargetRef", f)
				return v
			}
			if render.Scales(str("apiVersion"), str("kind"), str("name"), mw.Spec.TargetRef) {
				a := render.Autoscaler{Kind: restore.ScaledObjectGVK.Kind, Name: so.GetName()}
				if v, ok, _ := unstructured.NestedInt64(so.Object, "spec", "minReplicaCount"); ok {
					a.Min = &v
				}
				if v, ok, _ := unstructured.NestedInt64(so.Object, "spec", "maxReplicaCount"); ok {
					a.Max = &v
				}
				out = append(out, a)
			}
		}
	}
	return out
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
	mw, err := s.get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name})
	if err != nil {
		return nil, nil, err
	}
	return s, mw, nil
}

// get reads the ManagedWorkload key, with its kind set for printing.
func (s *session) get(ctx context.Context, key client.ObjectKey) (*napwakev1alpha1.ManagedWorkload, error) {
	mw := &napwakev1alpha1.ManagedWorkload{}
	if err := s.c.Get(ctx, key, mw); err != nil {
		req := s.read("getting ManagedWorkload "+key.Name, key.Name)
		req.namespace = key.Namespace
		return nil, s.explain(ctx, err, req)
	}
	mw.SetGroupVersionKind(napwakev1alpha1.GroupVersion.WithKind("ManagedWorkload"))
	return mw, nil
}

// eventsAbout lists the events on mw, on its target workload, and on the
// pod of its last wake.
func (s *session) eventsAbout(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload) ([]corev1.Event, error) {
	var all []corev1.Event
	names := []string{mw.Name}
	if mw.Spec.TargetRef.Name != mw.Name {
		names = append(names, mw.Spec.TargetRef.Name)
	}
	if w := mw.Status.LastWake; w != nil && w.Pod != "" {
		names = append(names, w.Pod) // its image's Pulled, for the wake's timeline
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
