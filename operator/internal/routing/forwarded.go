package routing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/forwarder"
	"napwake.dev/operator/internal/routing/epslice"
	"napwake.dev/operator/internal/routing/plan"
)

// The NEG forwarder (docs/design/pause-wake.md#forwarded-slices): while
// a workload with a Service in NEGs is paused,
// Route runs napwake-forwarder-<workload> beside it and leads that
// Service's slices to its Ready pods; once the workload is awake, or the
// forwarder is no longer needed, the Deployment is marked with the time it
// goes (forwarder.AnnotationDeleteAfter) and the forwarders controller
// deletes it then. The mark is on the Deployment, so a restarted operator
// honours it. With the forwarder off, the operator never touches one.

// ForwarderOptions turn the NEG forwarder on.
type ForwarderOptions struct {
	// Image is the forwarder image (--forwarder-image); "" turns it off.
	Image string
	// Replicas is how many forwarder pods run. Default 2.
	Replicas int32
	// Linger is how long a forwarder stays once the workload is awake: a
	// minute after its route has drained (the doorman's 30 s). Default 90s.
	Linger time.Duration
	// DoormanHost is where forwarders find the doorman. Default the
	// doorman Service's DNS name, <name>.<namespace>.svc.
	DoormanHost string
}

// annotationSpecHash, on a forwarder Deployment, is the hash of the spec
// the operator last wrote: it is written again only when that changes.
const annotationSpecHash = "napwake.dev/forwarder-spec"

func (r *Router) forwarderOn() bool { return r.opts.Forwarder.Image != "" }

func (r *Router) forwarderDoormanHost() string {
	if h := r.opts.Forwarder.DoormanHost; h != "" {
		return h
	}
	return r.doorman.Name + "." + r.doorman.Namespace + ".svc"
}

// fwdState is what Route found of the workload's forwarder.
type fwdState struct {
	ready    []forwarder.Pod
	notReady string
}

// namedPorts are the pod template's container ports by name.
func namedPorts(tmpl *corev1.PodTemplateSpec) map[string]int32 {
	out := map[string]int32{}
	for _, c := range tmpl.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name != "" && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
				out[p.Name] = p.ContainerPort
			}
		}
	}
	return out
}

// targetPorts maps each forwarded route to its target port.
func targetPorts(wants []plan.Want) map[routeKey]int32 {
	out := map[routeKey]int32{}
	for _, w := range wants {
		if w.Forwarded {
			out[routeKey{w.Service, w.PortName, w.Port}] = w.TargetPort
		}
	}
	return out
}

// ensureForwarder runs the forwarder the forwarded routes need, or marks a
// forwarder no longer needed for deletion, and reads its pods.
func (r *Router) ensureForwarder(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, routes []napwakev1alpha1.Route, targets map[routeKey]int32) (fwdState, error) {
	var ps []forwarder.Port
	for _, rt := range routes {
		if rt.Forwarded {
			ps = append(ps, forwarder.Port{Listen: targets[routeKey{rt.Service, rt.PortName, rt.Port}], Doorman: rt.DoormanPort})
		}
	}
	if len(ps) == 0 {
		return fwdState{}, r.retireForwarder(ctx, mw.Namespace, forwarder.Name(mw.Name))
	}
	want := forwarder.Deployment(forwarder.Spec{
		Namespace: mw.Namespace, Workload: mw.Name, OwnerUID: mw.UID,
		OperatorNamespace: r.doorman.Namespace, Image: r.opts.Forwarder.Image, Replicas: r.opts.Forwarder.Replicas,
		DoormanHost: r.forwarderDoormanHost(), Ports: ps, MaxWait: maxWaitOf(mw),
	})
	hash, err := specHash(want)
	if err != nil {
		return fwdState{}, err
	}
	want.Annotations = map[string]string{annotationSpecHash: hash}
	var have appsv1.Deployment
	err = r.reader.Get(ctx, client.ObjectKeyFromObject(want), &have)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.c.Create(ctx, want); err != nil {
			return fwdState{}, fmt.Errorf("creating the NEG forwarder Deployment %s/%s: %w", want.Namespace, want.Name, err)
		}
		have = *want
	case err != nil:
		return fwdState{}, fmt.Errorf("getting the NEG forwarder Deployment %s/%s: %w", want.Namespace, want.Name, err)
	case !metav1.IsControlledBy(&have, mw) || have.Labels[napwakev1alpha1.LabelOperator] != r.doorman.Namespace:
		return fwdState{}, fmt.Errorf("deployment %s/%s is not the NEG forwarder the operator runs for ManagedWorkload %s, and is never overwritten", have.Namespace, have.Name, mw.Name)
	case have.Annotations[annotationSpecHash] != hash || have.Annotations[forwarder.AnnotationDeleteAfter] != "" ||
		!equality.Semantic.DeepDerivative(want.Spec, have.Spec):
		// The hash says the operator's wish changed; the comparison finds
		// a hand edit (a replica count, an image) under an unchanged hash,
		// ignoring what the API server defaulted.
		// A patch: the operator's RBAC on Deployments is patch (as for its
		// targets), create and delete, never update.
		base := have.DeepCopy()
		have.Labels, have.OwnerReferences = want.Labels, want.OwnerReferences
		delete(have.Annotations, forwarder.AnnotationDeleteAfter)
		if have.Annotations == nil {
			have.Annotations = map[string]string{}
		}
		have.Annotations[annotationSpecHash] = hash
		have.Spec = want.Spec
		if err := r.c.Patch(ctx, &have, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return fwdState{}, fmt.Errorf("updating the NEG forwarder Deployment %s/%s: %w", have.Namespace, have.Name, err)
		}
	}
	var pods corev1.PodList
	if err := r.reader.List(ctx, &pods, client.InNamespace(mw.Namespace), client.MatchingLabels(forwarder.SelectorLabels(r.doorman.Namespace, mw.Name))); err != nil {
		return fwdState{}, fmt.Errorf("listing the NEG forwarder's pods: %w", err)
	}
	return fwdState{ready: forwarder.ReadyPods(pods.Items), notReady: forwarder.NotReady(&have, pods.Items)}, nil
}

// maxWaitOf is the workload's wake.maxWait, 0 when unset.
func maxWaitOf(mw *napwakev1alpha1.ManagedWorkload) time.Duration {
	if mw.Spec.Wake.MaxWait == nil {
		return 0
	}
	return mw.Spec.Wake.MaxWait.Duration
}

func specHash(d *appsv1.Deployment) (string, error) {
	b, err := json.Marshal(struct {
		Labels map[string]string
		Spec   appsv1.DeploymentSpec
	}{d.Labels, d.Spec})
	if err != nil {
		return "", fmt.Errorf("hashing the NEG forwarder's spec: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// retireForwarder marks the forwarder, if there is one, to go Linger from
// now, and has the forwarders controller look at it then.
func (r *Router) retireForwarder(ctx context.Context, namespace, name string) error {
	var dep appsv1.Deployment
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &dep); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !r.isOurForwarder(&dep) || dep.Annotations[forwarder.AnnotationDeleteAfter] != "" {
		return nil
	}
	base := dep.DeepCopy()
	if dep.Annotations == nil {
		dep.Annotations = map[string]string{}
	}
	dep.Annotations[forwarder.AnnotationDeleteAfter] = r.clock.Now().Add(r.opts.Forwarder.Linger).UTC().Format(time.RFC3339)
	if err := r.c.Patch(ctx, &dep, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	key := client.ObjectKeyFromObject(&dep)
	afterFunc(r.clock, r.opts.Forwarder.Linger, func() { r.reapLater(key) })
	return nil
}

// isOurForwarder: a forwarder this operator (its namespace) runs.
func (r *Router) isOurForwarder(d *appsv1.Deployment) bool {
	return d.Labels[napwakev1alpha1.LabelAppName] == napwakev1alpha1.AppNameForwarder &&
		d.Labels[napwakev1alpha1.LabelOperator] == r.doorman.Namespace
}

// reapLater has the forwarders controller look at a forwarder Deployment.
func (r *Router) reapLater(key types.NamespacedName) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case r.reap <- eventFor(d):
	default: // full: the Deployment's own watch and resync bring it back
	}
}

// forwardedSlices are the slices of the forwarded routes: the Ready
// forwarder pods as endpoints, the target ports as port numbers, and the
// napwake.dev/forwarded label. No Ready pod, no slice.
func forwardedSlices(namespace, workload string, routes []napwakev1alpha1.Route, targets map[routeKey]int32, uids map[string]types.UID, pods []forwarder.Pod) []discoveryv1.EndpointSlice {
	var fwd []napwakev1alpha1.Route
	for _, rt := range routes {
		if rt.Forwarded {
			rt.DoormanPort = targets[routeKey{rt.Service, rt.PortName, rt.Port}]
			fwd = append(fwd, rt)
		}
	}
	eps := make([]epslice.Doorman, len(pods))
	for i, p := range pods {
		eps[i] = epslice.Doorman{IP: p.IP, Family: p.Family, PodName: p.Name, PodNS: namespace, NodeName: p.NodeName}
	}
	out := epslice.BuildAll(namespace, workload, fwd, uids, eps)
	for i := range out {
		out[i].Labels[napwakev1alpha1.LabelForwarded] = "true"
		out[i].Endpoints = forwardedEndpoints(namespace, pods, napwakev1alpha1.IPFamily(out[i].AddressType))
	}
	return out
}

// forwardedEndpoints are the endpoints of a forwarded slice of the family:
// unlike the doorman's, each names its forwarder pod, which is in the
// Service's namespace, and its node, as GKE's NEG controller needs: it
// fails the sync on an endpoint without a nodeName, and skips one without
// a targetRef to a Pod of the Service's namespace that has the endpoint's
// address (docs/compatibility.md). Sorted by address, as the doorman's.
func forwardedEndpoints(namespace string, pods []forwarder.Pod, family napwakev1alpha1.IPFamily) []discoveryv1.Endpoint {
	var out []discoveryv1.Endpoint
	seen := map[string]bool{}
	for _, p := range pods {
		if p.Family != family || p.NodeName == "" || seen[p.IP] {
			continue
		}
		seen[p.IP] = true
		out = append(out, discoveryv1.Endpoint{
			Addresses:  []string{p.IP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(p.NodeName),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: p.Name, UID: p.UID},
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addresses[0] < out[j].Addresses[0] })
	return out
}

// direct are the routes that lead to the doorman itself.
func direct(routes []napwakev1alpha1.Route) []napwakev1alpha1.Route {
	var out []napwakev1alpha1.Route
	for _, rt := range routes {
		if !rt.Forwarded {
			out = append(out, rt)
		}
	}
	return out
}
