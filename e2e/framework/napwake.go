package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// ManagedWorkload fetches one ManagedWorkload.
func (f *Framework) ManagedWorkload(ctx context.Context, ns, name string) (*napwakev1alpha1.ManagedWorkload, error) {
	mw := &napwakev1alpha1.ManagedWorkload{}
	err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, mw)
	return mw, err
}

// Phase is the ManagedWorkload's status.phase ("" when it does not exist yet).
func (f *Framework) Phase(ctx context.Context, ns, name string) napwakev1alpha1.Phase {
	mw, err := f.ManagedWorkload(ctx, ns, name)
	if err != nil {
		return ""
	}
	return mw.Status.Phase
}

// Annotate merge-patches annotations onto a ManagedWorkload, as CI tooling
// and `kubectl napwake` do.
func (f *Framework) Annotate(ctx context.Context, ns, name string, ann map[string]string) error {
	return f.annotate(ctx, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, ann)
}

// AnnotateDeployment merges ann into a Deployment's annotations, as a
// user sets a labelled workload's settings.
func (f *Framework) AnnotateDeployment(ctx context.Context, ns, name string, ann map[string]string) error {
	return f.annotate(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, ann)
}

func (f *Framework) annotate(ctx context.Context, obj client.Object, ann map[string]string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	return f.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// RequestPause sets napwake.dev/pause-requested to now.
func (f *Framework) RequestPause(ctx context.Context, ns, name string) error {
	return f.Annotate(ctx, ns, name, map[string]string{napwakev1alpha1.AnnotationPauseRequested: time.Now().UTC().Format(time.RFC3339)})
}

// PodsOf counts the pods matching app=<name> that are not terminating.
func (f *Framework) PodsOf(ctx context.Context, ns, app string) (int, error) {
	pods, err := f.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

// PodsGone is true when no pod of the app is left at all.
func (f *Framework) PodsGone(ctx context.Context, ns, app string) (bool, error) {
	pods, err := f.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return false, err
	}
	return len(pods.Items) == 0, nil
}

// DoormanSliceAddresses returns the endpoint addresses of the EndpointSlices
// Napwake wrote for a Service (managed-by napwake.dev), sorted.
func (f *Framework) DoormanSliceAddresses(ctx context.Context, ns, service string) ([]string, error) {
	sel := fmt.Sprintf("%s=%s,%s=%s", napwakev1alpha1.LabelServiceName, service,
		napwakev1alpha1.LabelEndpointSliceManagedBy, napwakev1alpha1.EndpointSliceManager)
	slices, err := f.Clientset.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if ptr.Deref(e.Conditions.Ready, true) {
				addrs = append(addrs, e.Addresses...)
			}
		}
	}
	sort.Strings(addrs)
	return addrs, nil
}

// WatchSlicesLeave watches Napwake's EndpointSlices in ns and sends, once,
// the moment every one of services was seen without ip among its Ready
// endpoints. A watch sees every update, where polling a list can miss a
// state that lasts a second (a doorman pod restarted in place is Ready
// again that soon, and its routes come back). Call it while every service
// lists ip; the channel closes unsent when ctx ends first.
func (f *Framework) WatchSlicesLeave(ctx context.Context, ns, ip string, services []string) (<-chan time.Time, error) {
	sel := napwakev1alpha1.LabelEndpointSliceManagedBy + "=" + napwakev1alpha1.EndpointSliceManager
	w, err := f.Clientset.DiscoveryV1().EndpointSlices(ns).Watch(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("watching Napwake's EndpointSlices in %s: %w", ns, err)
	}
	out := make(chan time.Time, 1)
	go func() {
		defer close(out)
		defer w.Stop()
		lists := map[string]map[string]bool{} // service → slice name → lists ip
		left := map[string]bool{}
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok {
				continue
			}
			svc := s.Labels[napwakev1alpha1.LabelServiceName]
			if lists[svc] == nil {
				lists[svc] = map[string]bool{}
			}
			lists[svc][s.Name] = ev.Type != watch.Deleted && listsReady(s, ip)
			for _, name := range services {
				if !left[name] && lists[name] != nil && !anyTrue(lists[name]) {
					left[name] = true
				}
			}
			if len(left) == len(services) {
				out <- time.Now()
				return
			}
		}
	}()
	return out, nil
}

func anyTrue(m map[string]bool) bool {
	for _, v := range m {
		if v {
			return true
		}
	}
	return false
}

// listsReady says whether s lists ip among its Ready endpoints.
func listsReady(s *discoveryv1.EndpointSlice, ip string) bool {
	for _, e := range s.Endpoints {
		if ptr.Deref(e.Conditions.Ready, true) && slices.Contains(e.Addresses, ip) {
			return true
		}
	}
	return false
}

// DoormanSlices lists Napwake's EndpointSlices for a Service.
func (f *Framework) DoormanSlices(ctx context.Context, ns, service string) ([]discoveryv1.EndpointSlice, error) {
	sel := fmt.Sprintf("%s=%s,%s=%s", napwakev1alpha1.LabelServiceName, service,
		napwakev1alpha1.LabelEndpointSliceManagedBy, napwakev1alpha1.EndpointSliceManager)
	l, err := f.Clientset.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// ReadyDoormanIPs returns the IPs of the Ready doorman pods, sorted.
func (f *Framework) ReadyDoormanIPs(ctx context.Context, napwakeNS string) ([]string, error) {
	pods, err := f.Clientset.CoreV1().Pods(napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=doorman"})
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && PodReady(&p) {
			ips = append(ips, p.Status.PodIP)
		}
	}
	sort.Strings(ips)
	return ips, nil
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Events lists the events about one object, by reason.
func (f *Framework) EventReasons(ctx context.Context, ns, kind, name string) ([]string, error) {
	evs, err := f.Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fmt.Sprintf("involvedObject.kind=%s,involvedObject.name=%s", kind, name),
	})
	if err != nil {
		return nil, err
	}
	var reasons []string
	for _, e := range evs.Items {
		reasons = append(reasons, e.Reason)
	}
	return reasons, nil
}

// EventMessages lists the messages of the events with reason on the object
// kind/name.
func (f *Framework) EventMessages(ctx context.Context, ns, kind, name, reason string) ([]string, error) {
	evs, err := f.Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fmt.Sprintf("involvedObject.kind=%s,involvedObject.name=%s,reason=%s", kind, name, reason),
	})
	if err != nil {
		return nil, err
	}
	msgs := make([]string, 0, len(evs.Items))
	for _, e := range evs.Items {
		msgs = append(msgs, e.Message)
	}
	return msgs, nil
}

// ScaledDownAt is when the Deployment controller last scaled a ReplicaSet
// of Deployment name to 0, from its ScalingReplicaSet event (whole seconds);
// zero when it has not.
func (f *Framework) ScaledDownAt(ctx context.Context, ns, name string) (time.Time, error) {
	evs, err := f.Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fmt.Sprintf("involvedObject.kind=Deployment,involvedObject.name=%s,reason=ScalingReplicaSet", name),
	})
	if err != nil {
		return time.Time{}, err
	}
	var last time.Time
	for _, e := range evs.Items {
		if !strings.Contains(e.Message, "Scaled down") || !strings.HasSuffix(e.Message, "to 0") {
			continue
		}
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if at.After(last) {
			last = at
		}
	}
	return last, nil
}

// KubeProxyLeadsTo says whether kube-proxy's rules on the node (this
// process runs in its network namespace) send Service ns/name's port to
// every one of addrs and to no other address: what a caller through the
// ClusterIP meets, which lags the EndpointSlices by kube-proxy's sync. A
// rule still leading to a pod deleted a moment ago sends some callers to
// an address nobody answers any more ("no route to host").
func KubeProxyLeadsTo(ctx context.Context, ns, name string, addrs []string, port int32) (bool, error) {
	rules, err := natRules(ctx)
	if err != nil {
		return false, err
	}
	want := map[string]bool{}
	for _, a := range addrs {
		want[net.JoinHostPort(a, strconv.Itoa(int(port)))] = false
	}
	for _, line := range rules {
		_, dest, ok := strings.Cut(line, "--to-destination ")
		if !ok || !strings.Contains(line, `"`+ns+"/"+name) {
			continue
		}
		dest, _, _ = strings.Cut(dest, " ")
		if _, ok := want[dest]; !ok {
			return false, nil // leads somewhere else too
		}
		want[dest] = true
	}
	for _, seen := range want {
		if !seen {
			return false, nil
		}
	}
	return true, nil
}

// natRules is the node's NAT table, one rule per line: kube-proxy's
// rules in iptables mode (this process runs in the node's network
// namespace).
func natRules(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "iptables-save", "-t", "nat").Output()
	if err != nil {
		return nil, fmt.Errorf("iptables-save: %w", err)
	}
	return strings.Split(string(out), "\n"), nil
}

// DumpProxyRules writes kube-proxy's NAT rules on the node that name a
// Service of namespace ns ("ns/"): where a caller through each ClusterIP
// was being sent when a spec failed, which the EndpointSlices alone do not
// say (kube-proxy follows them after its sync, and after an API server
// outage only once its watches are back).
func DumpProxyRules(ctx context.Context, w io.Writer, ns string) {
	rules, err := natRules(ctx)
	if err != nil {
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintf(w, "kube-proxy's NAT rules naming %s/ (iptables-save -t nat, %s):\n", ns, time.Now().Format(time.TimeOnly))
	n := 0
	for _, line := range rules {
		if strings.Contains(line, `"`+ns+"/") {
			fmt.Fprintf(w, "    %s\n", line)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintf(w, "    none: kube-proxy has no rule for any Service of %s\n", ns)
	}
}

// PodReadyTimer watches an app's pods and records, with this process's
// clock, when the first one was created and when the first became Ready:
// the app's own start-up time, which the cold-start overhead subtracts.
type PodReadyTimer struct {
	Created, Ready time.Time
}

// WatchPodReady starts recording; it stops when ctx ends or a pod is Ready.
func (f *Framework) WatchPodReady(ctx context.Context, ns, app string) (*PodReadyTimer, <-chan struct{}, error) {
	w, err := f.Clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, nil, err
	}
	t := &PodReadyTimer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.DeletionTimestamp != nil {
				continue
			}
			now := time.Now()
			if t.Created.IsZero() {
				t.Created = now
			}
			if PodReady(p) {
				t.Ready = now
				return
			}
		}
	}()
	return t, done, nil
}

// WakeTimer is when a test saw the operator's part of one wake: the
// doorman's stamp (napwake.dev/last-request changed on the ManagedWorkload)
// and the scale it wrote (the Deployment's spec.replicas above zero), each
// by the test's clock as its watch event came. Both come through the same
// API server watch, so their difference is the operator's part to within
// the watches' jitter, where status.lastWake counts whole seconds.
type WakeTimer struct{ Stamped, Scaled time.Time }

// WatchWake starts watching the ManagedWorkload and Deployment name in ns
// for the next wake; done closes once both moments were seen or ctx ends.
// Call it before the request that wakes it.
func (f *Framework) WatchWake(ctx context.Context, ns, name string) (*WakeTimer, <-chan struct{}, error) {
	mws, err := f.Client.Watch(ctx, &napwakev1alpha1.ManagedWorkloadList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		return nil, nil, fmt.Errorf("watching ManagedWorkload %s/%s: %w", ns, name, err)
	}
	deps, err := f.Clientset.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		mws.Stop()
		return nil, nil, fmt.Errorf("watching Deployment %s/%s: %w", ns, name, err)
	}
	t := &WakeTimer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer mws.Stop()
		defer deps.Stop()
		stamp, seen := "", false
		for t.Stamped.IsZero() || t.Scaled.IsZero() {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-mws.ResultChan():
				mw, isMW := ev.Object.(*napwakev1alpha1.ManagedWorkload)
				if !ok {
					return
				}
				if !isMW || !t.Stamped.IsZero() {
					continue
				}
				now, v := time.Now(), mw.Annotations[napwakev1alpha1.AnnotationLastRequest]
				if seen && v != stamp {
					t.Stamped = now
				}
				stamp, seen = v, true
			case ev, ok := <-deps.ResultChan():
				d, isDep := ev.Object.(*appsv1.Deployment)
				if !ok {
					return
				}
				if isDep && t.Scaled.IsZero() && d.Spec.Replicas != nil && *d.Spec.Replicas > 0 {
					t.Scaled = time.Now()
				}
			}
		}
	}()
	return t, done, nil
}

// DialAndRead connects to addr, optionally sends nothing for a while, and
// returns the first line the server sends (for server-speaks-first apps).
func DialAndRead(ctx context.Context, addr string, timeout time.Duration) (string, time.Duration, error) {
	start := time.Now()
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", 0, err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	return string(buf[:n]), time.Since(start), err
}
