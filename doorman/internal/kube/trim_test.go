package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/randfill"
)

// cachedSlicePaths are the only JSON paths an EndpointSlice keeps in the
// doorman's cache: what FilterEndpoints and the cache's own lookups read
// (identity, the two labels, the controller owner reference, the address
// type, the ports, and each endpoint's addresses, ready and terminating
// conditions and targetRef). Indexes are written [].
var cachedSlicePaths = []string{
	"apiVersion", "kind",
	"metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion",
	"metadata.labels.endpointslice.kubernetes.io/managed-by", "metadata.labels.kubernetes.io/service-name",
	"metadata.ownerReferences[].apiVersion", "metadata.ownerReferences[].kind", "metadata.ownerReferences[].name",
	"metadata.ownerReferences[].uid", "metadata.ownerReferences[].controller",
	"addressType",
	"ports[].name", "ports[].port", "ports[].protocol",
	"endpoints[].addresses[]", "endpoints[].conditions.ready", "endpoints[].conditions.terminating",
	"endpoints[].targetRef.kind", "endpoints[].targetRef.namespace", "endpoints[].targetRef.name", "endpoints[].targetRef.uid",
}

// leafPaths lists the JSON paths of v's leaves, indexes written [].
func leafPaths(t *testing.T, v any) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(leafValues(t, v)))
}

// TestTheCachedEndpointSliceKeepsWhatTheDoormanReadsAndNothingElse fills
// every field of an EndpointSlice (randomly, many times, as new API fields
// would be), with the labels and a controller owner reference the doorman
// reads among others, and expects the trimmed slice to hold exactly the
// paths above, each with the original's value.
func TestTheCachedEndpointSliceKeepsWhatTheDoormanReadsAndNothingElse(t *testing.T) {
	want := slices.Clone(cachedSlicePaths)
	sort.Strings(want)
	// Strings never empty (JSON leaves an empty string out); managed
	// fields valid JSON.
	f := randfill.NewWithSeed(30).NilChance(0).NumElements(1, 3).Funcs(
		func(s *string, c randfill.Continue) { *s = "s" + c.String(0) },
		func(u *types.UID, c randfill.Continue) { *u = types.UID("u" + c.String(0)) },
		func(m *metav1.FieldsV1, _ randfill.Continue) { m.SetRawBytes([]byte(`{"f:addressType":{}}`)) })
	for i := range 50 {
		var s discoveryv1.EndpointSlice
		f.Fill(&s)
		s.Kind, s.APIVersion = "EndpointSlice", "discovery.k8s.io/v1"
		s.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
		s.Labels[discoveryv1.LabelServiceName] = "api"
		s.OwnerReferences[len(s.OwnerReferences)-1].Controller = ptr.To(true)
		for j := range len(s.OwnerReferences) - 1 {
			s.OwnerReferences[j].Controller = ptr.To(false)
		}
		full := leafPaths(t, &s)
		o, err := trimEndpointSlice(s.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		trimmed := o.(*discoveryv1.EndpointSlice)
		if got := leafPaths(t, trimmed); !slices.Equal(got, want) {
			t.Fatalf("fill %d: the trimmed slice holds\n%v\nwant exactly\n%v\n(the full slice holds %v)", i, got, want, full)
		}
		// Each kept value is the original's.
		ctrl := s.OwnerReferences[len(s.OwnerReferences)-1]
		checks := []struct {
			what      string
			got, want any
		}{
			{"identity", []string{trimmed.Name, trimmed.Namespace, string(trimmed.UID), trimmed.ResourceVersion}, []string{s.Name, s.Namespace, string(s.UID), s.ResourceVersion}},
			{"labels", trimmed.Labels, map[string]string{discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io", discoveryv1.LabelServiceName: "api"}},
			{"owner", fmt.Sprint(trimmed.OwnerReferences[0].APIVersion, trimmed.OwnerReferences[0].Kind, trimmed.OwnerReferences[0].Name, trimmed.OwnerReferences[0].UID, len(trimmed.OwnerReferences)),
				fmt.Sprint(ctrl.APIVersion, ctrl.Kind, ctrl.Name, ctrl.UID, 1)},
			{"address type", trimmed.AddressType, s.AddressType},
		}
		for j, p := range s.Ports {
			checks = append(checks, struct {
				what      string
				got, want any
			}{fmt.Sprint("port ", j), fmt.Sprint(*trimmed.Ports[j].Name, *trimmed.Ports[j].Port, *trimmed.Ports[j].Protocol), fmt.Sprint(*p.Name, *p.Port, *p.Protocol)})
		}
		for j, e := range s.Endpoints {
			te := trimmed.Endpoints[j]
			checks = append(checks, struct {
				what      string
				got, want any
			}{fmt.Sprint("endpoint ", j), fmt.Sprint(te.Addresses, *te.Conditions.Ready, *te.Conditions.Terminating, te.TargetRef.Kind, te.TargetRef.Namespace, te.TargetRef.Name, te.TargetRef.UID),
				fmt.Sprint(e.Addresses, *e.Conditions.Ready, *e.Conditions.Terminating, e.TargetRef.Kind, e.TargetRef.Namespace, e.TargetRef.Name, e.TargetRef.UID)})
		}
		for _, c := range checks {
			if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
				t.Fatalf("fill %d: %s is %v, want the original's %v", i, c.what, c.got, c.want)
			}
		}
	}
}

// TestTheDoormansCacheHoldsEndpointSlicesTrimmed: through NewCache, against
// the API server, a slice the EndpointSlice controller would write (with
// node names, zones, hints, serving, an annotation and managed fields) is
// held trimmed, and what the doorman reads is as written.
func TestTheDoormansCacheHoldsEndpointSlicesTrimmed(t *testing.T) {
	ns := newNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	written := slice(discoveryv1.AddressTypeIPv4, ep("10.244.1.5", "api-1", ptr.To(true)))
	written.Namespace = ns
	written.Annotations = map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "2026-12-06T04:00:00Z"}
	written.Ports[0].AppProtocol = ptr.To("http")
	e := &written.Endpoints[0]
	e.TargetRef.Namespace = ns
	e.Conditions.Serving, e.Conditions.Terminating = ptr.To(true), ptr.To(false)
	e.NodeName, e.Zone, e.Hostname = ptr.To("node-1"), ptr.To("europe-west1-b"), ptr.To("api-1")
	e.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "europe-west1-b"}}}
	if err := k8s.Create(ctx, written); err != nil {
		t.Fatal(err)
	}
	c, err := NewCache(cfg, scheme, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache never synced")
	}
	var held discoveryv1.EndpointSlice
	if err := c.Get(ctx, client.ObjectKeyFromObject(written), &held); err != nil {
		t.Fatal(err)
	}
	he := held.Endpoints[0]
	if held.Annotations != nil || held.ManagedFields != nil || held.Ports[0].AppProtocol != nil ||
		he.NodeName != nil || he.Zone != nil || he.Hostname != nil || he.Hints != nil || he.Conditions.Serving != nil {
		t.Fatalf("the cache holds the slice whole: %+v", held)
	}
	want, err := trimEndpointSlice(written.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	w := want.(*discoveryv1.EndpointSlice)
	if !equality.Semantic.DeepEqual(held.Endpoints, w.Endpoints) || !equality.Semantic.DeepEqual(held.Ports, w.Ports) ||
		!equality.Semantic.DeepEqual(held.Labels, w.Labels) || !equality.Semantic.DeepEqual(held.OwnerReferences, w.OwnerReferences) ||
		held.AddressType != w.AddressType {
		t.Fatalf("the cache holds %+v; want what the doorman reads as written, %+v", held, w)
	}
}

// cachedPodPaths are the only JSON paths a Pod keeps in the doorman's
// cache: what FilterEndpoints and PodEndpoints read (identity, labels,
// deletion timestamp, the ports of containers and of sidecar init
// containers, phase, addresses and the Ready condition).
var cachedPodPaths = []string{
	"apiVersion", "kind",
	"metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion", "metadata.deletionTimestamp", "metadata.labels.app",
	"spec.containers[].name", "spec.containers[].ports[].name", "spec.containers[].ports[].containerPort", "spec.containers[].ports[].protocol",
	"spec.initContainers[].name", "spec.initContainers[].restartPolicy",
	"spec.initContainers[].ports[].name", "spec.initContainers[].ports[].containerPort", "spec.initContainers[].ports[].protocol",
	"status.phase", "status.podIP", "status.podIPs[].ip", "status.conditions[].type", "status.conditions[].status",
}

// cachedServicePaths are the only JSON paths a Service keeps in the
// doorman's cache: what PodEndpoints reads.
var cachedServicePaths = []string{
	"apiVersion", "kind",
	"metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion",
	"spec.type", "spec.selector.app", "spec.ipFamilies[]",
	"spec.ports[].name", "spec.ports[].protocol", "spec.ports[].port", "spec.ports[].targetPort",
}

// leafValues maps each JSON leaf path of v, indexes written [], to its
// values as text; a null (a zero time) is no leaf.
func leafValues(t *testing.T, v any) map[string][]string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(strings.TrimPrefix(prefix+"."+k, "."), e)
			}
		case []any:
			for _, e := range x {
				walk(prefix+"[]", e)
			}
		case nil: // a zero time: no value
		default:
			out[prefix] = append(out[prefix], fmt.Sprint(x))
		}
	}
	walk("", doc)
	return out
}

// TestTheCachedPodAndServiceKeepWhatTheDoormanReadsAndNothingElse fills
// every field of a Pod and a Service (randomly, many times, as new API
// fields would be), with what the doorman reads among them (labels, a
// Ready condition, a sidecar init container), and expects the trimmed
// object to hold exactly the paths above, each value one of the
// original's at that path.
func TestTheCachedPodAndServiceKeepWhatTheDoormanReadsAndNothingElse(t *testing.T) {
	f := randfill.NewWithSeed(35).NilChance(0).NumElements(2, 3).Funcs(
		func(s *string, c randfill.Continue) { *s = "s" + c.String(0) },
		func(u *types.UID, c randfill.Continue) { *u = types.UID("u" + c.String(0)) },
		func(m *metav1.FieldsV1, _ randfill.Continue) { m.SetRawBytes([]byte(`{"f:spec":{}}`)) })
	check := func(t *testing.T, i int, full, trimmed any, paths []string) {
		t.Helper()
		want := slices.Clone(paths)
		sort.Strings(want)
		kept := leafValues(t, trimmed)
		if got := leafPaths(t, trimmed); !slices.Equal(got, want) {
			t.Fatalf("fill %d: the trimmed object holds\n%v\nwant exactly\n%v", i, got, want)
		}
		orig := leafValues(t, full)
		for p, vs := range kept {
			for _, v := range vs {
				if !slices.Contains(orig[p], v) {
					t.Fatalf("fill %d: %s is %q in the trimmed object, none of the original's %q", i, p, v, orig[p])
				}
			}
		}
	}
	for i := range 50 {
		var p corev1.Pod
		f.Fill(&p)
		p.Kind, p.APIVersion = "Pod", "v1"
		p.Labels = map[string]string{"app": "api"}
		p.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		p.Spec.InitContainers[1].RestartPolicy = nil
		p.Status.Conditions[0].Type = corev1.PodReady
		p.Status.Phase, p.DeletionTimestamp = corev1.PodRunning, ptr.To(metav1.Now())
		o, err := trimPod(p.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		tp := o.(*corev1.Pod)
		check(t, i, &p, tp, cachedPodPaths)
		if len(tp.Spec.InitContainers) != 1 || len(tp.Status.Conditions) != 1 || tp.Status.Conditions[0].Status != p.Status.Conditions[0].Status {
			t.Fatalf("fill %d: kept init containers %v, conditions %v: want the sidecar and the Ready condition alone", i, tp.Spec.InitContainers, tp.Status.Conditions)
		}

		var s corev1.Service
		f.Fill(&s)
		s.Kind, s.APIVersion = "Service", "v1"
		s.Spec.Selector, s.Spec.Type = map[string]string{"app": "api"}, corev1.ServiceTypeClusterIP
		o, err = trimService(s.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		ts := o.(*corev1.Service)
		check(t, i, &s, ts, cachedServicePaths)
		if !equality.Semantic.DeepEqual(ts.Spec.Selector, s.Spec.Selector) || len(ts.Spec.Ports) != len(s.Spec.Ports) {
			t.Fatalf("fill %d: kept %+v of %+v", i, ts.Spec, s.Spec)
		}
	}
}
