// Package framework is what the end-to-end scenarios share: a client for the
// cluster named by $KUBECONFIG, namespaces that clean up after themselves,
// the sample app, bounded polling, and a dump of objects, events and logs
// when a scenario fails.
//
// It must not assert: scenarios assert, this only does and reads.
package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// SampleAppImage is the image hack/e2e.sh builds and loads into the node.
var SampleAppImage = envOr("NAPWAKE_E2E_SAMPLEAPP_IMAGE", "napwake.local/napwake-sampleapp:e2e")

// Framework holds the clients a scenario uses.
type Framework struct {
	Clientset kubernetes.Interface
	Client    client.WithWatch
}

// New connects to the cluster named by $KUBECONFIG.
func New() (*Framework, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig (set KUBECONFIG; make e2e does): %w", err)
	}
	// client-go's default of 5 requests a second (burst 10) would throttle
	// the suite's own polls: a spec reading three Services' slices every
	// 50 ms waited 600 ms a round on its own client, long enough to miss
	// a state that lasted a second.
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = napwakev1alpha1.AddToScheme(scheme)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &Framework{Clientset: cs, Client: c}, nil
}

// CreateNamespace makes a namespace with a generated name and labels.
func (f *Framework) CreateNamespace(ctx context.Context, prefix string, labels map[string]string) (string, error) {
	ns, err := f.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating namespace: %w", err)
	}
	return ns.Name, nil
}

// DeleteNamespace removes a namespace without waiting for it to go.
func (f *Framework) DeleteNamespace(ctx context.Context, name string) {
	_ = f.Clientset.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
}

// SampleApp describes one sample app Deployment and its Service.
type SampleApp struct {
	Name         string
	Namespace    string
	Replicas     int32
	StartupDelay time.Duration
	Labels       map[string]string // extra labels on the Deployment (napwake.dev/enabled…)
	Annotations  map[string]string // on the Deployment (napwake.dev/idle-after…)
	Greet        bool              // also serve a greet-first TCP port 3306
	// StandInPrometheus also answers Prometheus instant queries with the
	// value SetActivity sets (the sample app's --stand-in-prometheus).
	StandInPrometheus bool
	// PrometheusRequires are headers every query to the stand-in must
	// carry, or it answers 401.
	PrometheusRequires map[string]string
	// Upstream, if set, is a URL each request to / calls first, its answer
	// appended (the sample app's --upstream): one tier calling the next.
	Upstream string
	// Message is what / answers; empty: the sample app's default.
	Message string
	// ShutdownDelay is how long the app goes on serving after SIGTERM (the
	// sample app's --shutdown-delay); the pod's grace period covers it.
	ShutdownDelay time.Duration
	// PreStop is a preStop hook's sleep: the pod goes on serving this long
	// after it is deleted, before SIGTERM (as many production pods do, to
	// let kube-proxy drop them first); the grace period covers it too.
	PreStop time.Duration
	// CPURequest, such as "10m", is the container's CPU request: an HPA on
	// CPU utilization needs one.
	CPURequest string
}

// Deployment renders the app's Deployment: a readiness probe on /ready,
// restricted security context, the locally loaded image.
func (a SampleApp) Deployment() *appsv1.Deployment {
	sel := map[string]string{"app": a.Name}
	labels := map[string]string{"app": a.Name}
	for k, v := range a.Labels {
		labels[k] = v
	}
	args := []string{fmt.Sprintf("--startup-delay=%s", a.StartupDelay)}
	ports := []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	if a.Greet {
		args = append(args, "--greet-listen=:3306")
		ports = append(ports, corev1.ContainerPort{Name: "mysql", ContainerPort: 3306})
	}
	if a.StandInPrometheus {
		args = append(args, "--stand-in-prometheus")
	}
	for _, name := range slices.Sorted(maps.Keys(a.PrometheusRequires)) {
		args = append(args, "--prometheus-require-header="+name+"="+a.PrometheusRequires[name])
	}
	if a.Upstream != "" {
		args = append(args, "--upstream="+a.Upstream)
	}
	if a.Message != "" {
		args = append(args, "--message="+a.Message)
	}
	if a.ShutdownDelay > 0 {
		args = append(args, "--shutdown-delay="+a.ShutdownDelay.String())
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace, Labels: labels, Annotations: a.Annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(a.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       a.PodSpec(args, ports),
			},
		},
	}
}

// PodSpec is the sample app's pod: restricted, read-only, probed.
func (a SampleApp) PodSpec(args []string, ports []corev1.ContainerPort) corev1.PodSpec {
	var resources corev1.ResourceRequirements
	if a.CPURequest != "" {
		resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(a.CPURequest)}
	}
	var lifecycle *corev1.Lifecycle
	if a.PreStop > 0 {
		lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: int64(a.PreStop.Seconds())}}}
	}
	return corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To(2 + int64(a.ShutdownDelay.Seconds()) + int64(a.PreStop.Seconds())),
		Containers: []corev1.Container{{
			Name:            "app",
			Image:           SampleAppImage,
			ImagePullPolicy: corev1.PullNever,
			Args:            args,
			Ports:           ports,
			Resources:       resources,
			Lifecycle:       lifecycle,
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}},
				PeriodSeconds: 1,
			},
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot:             ptr.To(true),
				AllowPrivilegeEscalation: ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		}},
	}
}

// Service renders the app's ClusterIP Service: port 80 → 8080 named http,
// and 3306 named mysql when the app greets.
func (a SampleApp) Service() *corev1.Service {
	ports := []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}
	if a.Greet {
		ports = append(ports, corev1.ServicePort{Name: "mysql", Port: 3306, TargetPort: intstr.FromInt32(3306)})
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": a.Name}, Ports: ports},
	}
}

// Deploy creates the app's Deployment and Service.
func (f *Framework) Deploy(ctx context.Context, a SampleApp) error {
	if _, err := f.Clientset.AppsV1().Deployments(a.Namespace).Create(ctx, a.Deployment(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Deployment %s/%s: %w", a.Namespace, a.Name, err)
	}
	if _, err := f.Clientset.CoreV1().Services(a.Namespace).Create(ctx, a.Service(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Service %s/%s: %w", a.Namespace, a.Name, err)
	}
	return nil
}

// ReadyReplicas is the Deployment's status.readyReplicas.
func (f *Framework) ReadyReplicas(ctx context.Context, ns, name string) (int32, error) {
	d, err := f.Clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	return d.Status.ReadyReplicas, nil
}

// StatefulSetReadyReplicas is the StatefulSet's status.readyReplicas.
func (f *Framework) StatefulSetReadyReplicas(ctx context.Context, ns, name string) (int32, error) {
	s, err := f.Clientset.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	return s.Status.ReadyReplicas, nil
}

// ClusterIP returns the Service's ClusterIP.
func (f *Framework) ClusterIP(ctx context.Context, ns, name string) (string, error) {
	s, err := f.Clientset.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return s.Spec.ClusterIP, nil
}

// Response is what HTTPGet saw.
type Response struct {
	Status int
	Header http.Header
	// Close is true when the server said Connection: close (Go's client
	// takes that header out of Header).
	Close   bool
	Body    string
	Elapsed time.Duration
}

// HTTPGet sends one GET with the given headers, from this process: the
// test runs inside the node's network namespace, so it calls from the node.
func HTTPGet(ctx context.Context, url string, header map[string]string, timeout time.Duration) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Response{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return do(req, &http.Transport{DisableKeepAlives: true, Proxy: nil}, timeout)
}

// do sends req over tr and reads the whole response.
func do(req *http.Request, tr *http.Transport, timeout time.Duration) (Response, error) {
	start := time.Now()
	resp, err := (&http.Client{Timeout: timeout, Transport: tr}).Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Close: resp.Close, Body: string(body), Elapsed: time.Since(start)}, err
}

// Dump writes what a person debugging a failed scenario needs: the
// namespace's objects, its events in time order, and the logs of its pods
// and of Napwake's own.
func (f *Framework) Dump(ctx context.Context, w io.Writer, namespaces ...string) {
	for _, ns := range namespaces {
		fmt.Fprintf(w, "\n===== namespace %s =====\n", ns)
		if deps, err := f.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, d := range deps.Items {
				fmt.Fprintf(w, "Deployment %s: replicas=%v ready=%d\n", d.Name, ptr.Deref(d.Spec.Replicas, 1), d.Status.ReadyReplicas)
			}
		}
		if sts, err := f.Clientset.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, s := range sts.Items {
				fmt.Fprintf(w, "StatefulSet %s: replicas=%v ready=%d\n", s.Name, ptr.Deref(s.Spec.Replicas, 1), s.Status.ReadyReplicas)
			}
		}
		mws := &napwakev1alpha1.ManagedWorkloadList{}
		if err := f.Client.List(ctx, mws, client.InNamespace(ns)); err == nil {
			for _, mw := range mws.Items {
				fmt.Fprintf(w, "ManagedWorkload %s: annotations=%v status=%+v\n", mw.Name, mw.Annotations, mw.Status)
			}
		}
		if slices, err := f.Clientset.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, s := range slices.Items {
				var eps []string
				for _, e := range s.Endpoints {
					eps = append(eps, fmt.Sprintf("%v ready=%v", e.Addresses, ptr.Deref(e.Conditions.Ready, false)))
				}
				fmt.Fprintf(w, "EndpointSlice %s labels=%v endpoints=%v\n", s.Name, s.Labels, eps)
			}
		}
		if evs, err := f.Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
			items := evs.Items
			sort.Slice(items, func(i, j int) bool { return items[i].LastTimestamp.Before(&items[j].LastTimestamp) })
			for _, e := range items {
				fmt.Fprintf(w, "event %s %s %s/%s: %s\n", e.LastTimestamp.Format(time.TimeOnly), e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
			}
		}
		f.dumpLogs(ctx, w, ns, func(raw []byte) []byte { return lastLines(raw, 60) })
	}
}

// dumpLogs writes each pod's state and each container's log, cut by keep.
func (f *Framework) dumpLogs(ctx context.Context, w io.Writer, ns string, keep func([]byte) []byte, opts ...func(*corev1.PodLogOptions)) {
	pods, err := f.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		fmt.Fprintf(w, "Pod %s: %s\n", p.Name, PodState(&p))
		for _, c := range p.Spec.Containers {
			o := &corev1.PodLogOptions{Container: c.Name}
			for _, opt := range opts {
				opt(o)
			}
			raw, err := f.Clientset.CoreV1().Pods(ns).GetLogs(p.Name, o).DoRaw(ctx)
			if err != nil {
				continue
			}
			fmt.Fprintf(w, "--- logs %s/%s [%s] (phase %s)\n%s\n", ns, p.Name, c.Name, p.Status.Phase, indent(keep(raw)))
		}
	}
}

// lastLines keeps raw's last n lines.
func lastLines(raw []byte, n int) []byte {
	lines := bytes.SplitAfter(bytes.TrimRight(raw, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, nil)
}

// aboutOrLast keeps the lines that name about, and the last n lines.
func aboutOrLast(raw []byte, about string, n int) []byte {
	lines := bytes.SplitAfter(bytes.TrimRight(raw, "\n"), []byte("\n"))
	var out [][]byte
	for i, l := range lines {
		if i >= len(lines)-n || bytes.Contains(l, []byte(about)) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, nil)
}

// PodState says where a pod is: its phase, node, IP, and each container's
// state (waiting or terminated with its reason, exit code and message).
func PodState(p *corev1.Pod) string {
	parts := []string{fmt.Sprintf("phase=%s node=%s ip=%s", p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)}
	if p.Status.Reason != "" {
		parts = append(parts, "reason="+p.Status.Reason+" "+p.Status.Message)
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch st := cs.State; {
		case st.Waiting != nil:
			parts = append(parts, fmt.Sprintf("%s waiting %s %s", cs.Name, st.Waiting.Reason, st.Waiting.Message))
		case st.Terminated != nil:
			parts = append(parts, fmt.Sprintf("%s terminated %s exit=%d %s", cs.Name, st.Terminated.Reason, st.Terminated.ExitCode, st.Terminated.Message))
		case st.Running != nil:
			parts = append(parts, fmt.Sprintf("%s running since %s restarts=%d", cs.Name, st.Running.StartedAt.Format(time.TimeOnly), cs.RestartCount))
		}
	}
	return strings.Join(parts, "; ")
}

// DumpComponents writes the logs of Napwake's own pods in ns since the
// failed spec began: every line that names the spec's namespace about, and
// the last 60 lines, so the minute that matters is in the dump however
// long the spec ran.
func (f *Framework) DumpComponents(ctx context.Context, w io.Writer, ns, about string, since time.Time) {
	fmt.Fprintf(w, "\n===== Napwake in %s, since %s, lines naming %s and the last 60 =====\n", ns, since.Format(time.TimeOnly), about)
	f.dumpLogs(ctx, w, ns, func(raw []byte) []byte { return aboutOrLast(raw, about, 60) },
		func(o *corev1.PodLogOptions) { o.SinceTime = &metav1.Time{Time: since.Add(-5 * time.Second)} })
}

func indent(b []byte) string {
	return "    " + strings.ReplaceAll(string(bytes.TrimRight(b, "\n")), "\n", "\n    ")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// StatefulSet renders the app as a StatefulSet with a headless governing
// Service of its own (<name>-pods) besides the ClusterIP Service.
func (a SampleApp) StatefulSet() *appsv1.StatefulSet {
	d := a.Deployment()
	return &appsv1.StatefulSet{
		ObjectMeta: d.ObjectMeta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:            d.Spec.Replicas,
			Selector:            d.Spec.Selector,
			ServiceName:         a.Name + "-pods",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template:            d.Spec.Template,
		},
	}
}

// DeployStatefulSet creates the app as a StatefulSet with its Services.
func (f *Framework) DeployStatefulSet(ctx context.Context, a SampleApp) error {
	headless := a.Service()
	headless.Name = a.Name + "-pods"
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	for _, s := range []*corev1.Service{headless, a.Service()} {
		if _, err := f.Clientset.CoreV1().Services(a.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Service %s/%s: %w", a.Namespace, s.Name, err)
		}
	}
	if _, err := f.Clientset.AppsV1().StatefulSets(a.Namespace).Create(ctx, a.StatefulSet(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating StatefulSet %s/%s: %w", a.Namespace, a.Name, err)
	}
	return nil
}
