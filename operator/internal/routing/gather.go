package routing

import (
	"context"
	"fmt"
	"net"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing/epslice"
	"napwake.dev/operator/internal/routing/plan"
	"napwake.dev/shared/sliceowner"
)

// Gathering: what Route reads before it decides (Services, their own
// EndpointSlices, Ingresses, the Ready doorman pods), past the cache where a
// stale read would route wrongly.

// gather reads what the plan needs: the namespace's Services and Ingresses
// (cached), and which Services other pods serve (read past the cache).
func (r *Router) gather(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, tmpl *corev1.PodTemplateSpec, doormen []epslice.Doorman) (plan.Input, error) {
	in := plan.Input{PodLabels: tmpl.Labels, DoormanFamilies: epslice.Families(doormen), ServedByOtherPods: map[string]bool{}}
	var svcs corev1.ServiceList
	if err := r.c.List(ctx, &svcs, client.InNamespace(mw.Namespace)); err != nil {
		return in, fmt.Errorf("listing Services in %s: %w", mw.Namespace, err)
	}
	in.Services = svcs.Items
	var ings networkingv1.IngressList
	if err := r.c.List(ctx, &ings, client.InNamespace(mw.Namespace)); err != nil {
		return in, fmt.Errorf("listing Ingresses in %s: %w", mw.Namespace, err)
	}
	in.Ingresses = ings.Items
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if !plan.Selects(svc, tmpl.Labels) {
			continue
		}
		other, err := r.servedByOtherPods(ctx, svc, tmpl.Labels)
		if err != nil {
			return in, err
		}
		in.ServedByOtherPods[svc.Name] = other
	}
	return in, nil
}

// servedByOtherPods reports whether a Ready endpoint in the Service's own
// EndpointSlices is a pod that isn't the workload's (its labels don't carry
// the workload's template labels), or no pod at all.
func (r *Router) servedByOtherPods(ctx context.Context, svc *corev1.Service, podLabels map[string]string) (bool, error) {
	var slices discoveryv1.EndpointSliceList
	if err := r.reader.List(ctx, &slices, client.InNamespace(svc.Namespace), client.MatchingLabels{
		napwakev1alpha1.LabelServiceName:            svc.Name,
		napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceControllerManager,
	}); err != nil {
		return false, fmt.Errorf("listing Service %s/%s's EndpointSlices: %w", svc.Namespace, svc.Name, err)
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" {
				return true, nil
			}
			var pod corev1.Pod
			ns := e.TargetRef.Namespace
			if ns == "" {
				ns = svc.Namespace
			}
			if err := r.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: e.TargetRef.Name}, &pod); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return false, fmt.Errorf("getting pod %s/%s behind Service %s: %w", ns, e.TargetRef.Name, svc.Name, err)
			}
			if !carries(pod.Labels, podLabels) {
				return true, nil
			}
		}
	}
	return false, nil
}

func carries(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// doormen returns the Ready doorman pods' addresses, from the doorman
// Service's EndpointSlices.
func (r *Router) doormen(ctx context.Context) ([]epslice.Doorman, error) {
	var slices discoveryv1.EndpointSliceList
	if err := r.c.List(ctx, &slices, client.InNamespace(r.doorman.Namespace), client.MatchingLabels{napwakev1alpha1.LabelServiceName: r.doorman.Name}); err != nil {
		return nil, fmt.Errorf("listing the doorman Service %s's EndpointSlices: %w", r.doorman, err)
	}
	// Only the EndpointSlice controller's slices of the doorman Service: one
	// someone made by hand with its labels would lead every routed Service
	// to addresses of their choosing.
	own := slices.Items[:0]
	for i := range slices.Items {
		if sliceowner.ByController(&slices.Items[i], r.doorman.Name) {
			own = append(own, slices.Items[i])
		}
	}
	return DoormenFrom(own), nil
}

// DoormenFrom reads the Ready doorman addresses from the doorman Service's
// EndpointSlices: endpoints whose ready condition is true or unset (the
// API's reading of unset) and that are not terminating, of address type
// IPv4 or IPv6, each address once, sorted. A doorman pod is Ready only once
// it listens on every routed port, so a starting pod joins the routed
// slices only then; a terminating one leaves them at once, even when its
// endpoint stays Ready (a Service publishing not-ready addresses).
func DoormenFrom(slices []discoveryv1.EndpointSlice) []epslice.Doorman {
	seen := map[string]bool{}
	var out []epslice.Doorman
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		for _, e := range s.Endpoints {
			if (e.Conditions.Ready != nil && !*e.Conditions.Ready) || (e.Conditions.Terminating != nil && *e.Conditions.Terminating) {
				continue
			}
			for _, ip := range e.Addresses {
				if seen[ip] || net.ParseIP(ip) == nil {
					continue
				}
				seen[ip] = true
				d := epslice.Doorman{IP: ip, Family: napwakev1alpha1.IPFamily(s.AddressType)}
				if e.TargetRef != nil {
					d.PodName, d.PodNS = e.TargetRef.Name, e.TargetRef.Namespace
				}
				if e.NodeName != nil {
					d.NodeName = *e.NodeName
				}
				out = append(out, d)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IP < out[j].IP })
	return out
}

func (r *Router) serviceUIDs(ctx context.Context, namespace string, routes []napwakev1alpha1.Route) map[string]types.UID {
	out := map[string]types.UID{}
	for _, rt := range routes {
		if _, ok := out[rt.Service]; ok {
			continue
		}
		var svc corev1.Service
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: rt.Service}, &svc); err == nil {
			out[rt.Service] = svc.UID
		}
	}
	return out
}
