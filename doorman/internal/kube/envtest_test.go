package kube

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/addr"
	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/shared/testenv"
)

var (
	cfg    *rest.Config
	scheme = runtime.NewScheme()
	k8s    client.Client
)

func TestMain(m *testing.M) {
	if os.Getenv(callersEnv) != "" {
		// The held callers' process of the wake latency test.
		os.Exit(callersMain())
	}
	_ = clientgoscheme.AddToScheme(scheme)
	_ = napwakev1alpha1.AddToScheme(scheme)
	os.Exit(testenv.Run(m, func(s *testenv.Suite) (err error) {
		cfg = s.Config
		k8s, err = client.New(cfg, client.Options{Scheme: scheme})
		return err
	}))
}

var nsSeq int

func newNamespace(t *testing.T) string {
	t.Helper()
	nsSeq++
	name := fmt.Sprintf("doorman-%d-%d", os.Getpid()%1000, nsSeq)
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// freeDoormanPort returns a free port in the doorman range 20000-29999.
func freeDoormanPort(t *testing.T) int {
	t.Helper()
	for range 100 {
		port := napwakev1alpha1.DoormanPortMin + rand.IntN(napwakev1alpha1.DoormanPortMax-napwakev1alpha1.DoormanPortMin+1)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			_ = ln.Close()
			return port
		}
	}
	t.Fatal("no free port in 20000-29999")
	return 0
}

// createMW creates a ManagedWorkload routed on doormanPort, in phase; a
// zero pausedAt records no pause in its status.
func createMW(t *testing.T, namespace string, doormanPort int, phase napwakev1alpha1.Phase, pausedAt time.Time) {
	t.Helper()
	ctx := context.Background()
	mw := &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: namespace},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"}}}
	if err := k8s.Create(ctx, mw); err != nil {
		t.Fatal(err)
	}
	mw.Status = napwakev1alpha1.ManagedWorkloadStatus{Phase: phase,
		Pause:   &napwakev1alpha1.PauseStatus{StartedAt: metav1.NewTime(pausedAt), Replicas: 1, Reason: napwakev1alpha1.PauseIdle},
		Doorman: &napwakev1alpha1.DoormanStatus{Routes: []napwakev1alpha1.Route{{Service: "api", PortName: "http", Port: 80, DoormanPort: int32(doormanPort)}}}}
	if pausedAt.IsZero() {
		mw.Status.Pause = nil
	}
	if err := k8s.Status().Update(ctx, mw); err != nil {
		t.Fatal(err)
	}
}

// readyPod creates a Pod whose status.podIPs holds ip, and the Service's
// own EndpointSlice listing it Ready on port.
func readyPod(t *testing.T, namespace, name, ip string, port int, managedBy string) {
	t.Helper()
	createSlice(t, namespace, createPod(t, namespace, name, ip), ip, port, managedBy)
}

func createPod(t *testing.T, namespace, name, ip string) *corev1.Pod {
	t.Helper()
	return createLabelledPod(t, namespace, name, ip, nil, 0)
}

// createLabelledPod creates a Pod with labels whose container serves
// "web" on webPort (none when 0), its status.podIPs holding ip, not Ready.
func createLabelledPod(t *testing.T, namespace, name, ip string, labels map[string]string, webPort int) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}}}
	if webPort != 0 {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: int32(webPort), Protocol: corev1.ProtocolTCP}}
	}
	if err := k8s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	if err := k8s.Status().Update(ctx, p); err != nil {
		t.Fatalf("setting the Pod's status.podIPs: %v", err)
	}
	return p
}

func createSlice(t *testing.T, namespace string, p *corev1.Pod, ip string, port int, managedBy string) {
	t.Helper()
	createSliceNamed(t, namespace, p.Name+"-slice", p, ip, port, managedBy)
}

func createSliceNamed(t *testing.T, namespace, name string, p *corev1.Pod, ip string, port int, managedBy string) {
	t.Helper()
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{
			napwakev1alpha1.LabelServiceName: "api", napwakev1alpha1.LabelEndpointSliceManagedBy: managedBy},
			OwnerReferences: serviceOwner("api")},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: p.Name, UID: p.UID}}},
	}
	if err := k8s.Create(context.Background(), s); err != nil {
		t.Fatalf("creating the EndpointSlice: %v", err)
	}
}

type stack struct {
	srv   *proxy.Server
	hooks *Hooks
	m     *metrics.Metrics
	table *proxy.Table
	cache cache.Cache
}

// startDoorman runs the proxy, the watcher and the hooks against envtest,
// with the loopback exception of the dial rules (test pods are on 127.0.0.1).
func startDoorman(t *testing.T, clk clock.PassiveClock) *stack {
	t.Helper()
	return startDoormanWith(t, clk, proxy.DefaultLimits())
}

func startDoormanWith(t *testing.T, clk clock.PassiveClock, limits proxy.Limits) *stack {
	t.Helper()
	return startDoormanThrough(t, clk, limits, k8s)
}

// startDoormanThrough is startDoormanWith whose hooks write through
// writer (an API server that answers slowly, say).
func startDoormanThrough(t *testing.T, clk clock.PassiveClock, limits proxy.Limits, writer client.Client) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), logr.Discard()))
	c, err := NewCache(cfg, scheme, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&eventSink{c: k8s})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "napwake-doorman", Host: "doorman-test"})
	rules := addr.Rules{} // the production rules: test pods use 10.244/16 addresses
	m := metrics.New()
	table := proxy.NewTable()
	hooks := NewHooks(writer, recorder, clk, logr.Discard())
	srv := proxy.New(proxy.Config{ListenAddress: "127.0.0.1", Rules: rules, Silence: 200 * time.Millisecond, Dial: dialLoopback, Limits: limits}, table, hooks, m)
	srv.Start(ctx)
	w := NewWatcher(c, table, srv, rules)
	w.OnConflict = hooks.RouteConflict
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = c.Start(ctx) }()
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		srv.Shutdown(sctx)
		scancel()
		cancel()
		wg.Wait()
		broadcaster.Shutdown()
	})
	return &stack{srv: srv, hooks: hooks, m: m, table: table, cache: c}
}

// dialLoopback stands in for the pod network: a pod address 10.244.x.y:port
// is served by a test listener on 127.0.0.1:port. The API server refuses
// loopback endpoint addresses, and traffic stays on loopback.
func dialLoopback(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
	if !netip.MustParsePrefix("10.244.0.0/16").Contains(ap.Addr()) {
		return nil, fmt.Errorf("test dialer: %s is not a test pod address", ap)
	}
	return podDial(ctx, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port()))
}

// podDial is the doorman's own dial, as in production.
var podDial = proxy.Dialer(time.Second)

// eventSink writes events through the controller-runtime client.
type eventSink struct{ c client.Client }

func (s *eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return e, s.c.Create(context.Background(), e)
}
func (s *eventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return e, s.c.Update(context.Background(), e)
}
func (s *eventSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return e, nil }

func dialPort(t *testing.T, port int) net.Conn {
	t.Helper()
	var c net.Conn
	testenv.EventuallyTrue(t, "the doorman listening on its port", func() bool {
		var err error
		c, err = net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		return err == nil
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func events(t *testing.T, namespace, reason string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func TestARequestWakesThroughTheAPIServerAndIsPassedToTheReadyPod(t *testing.T) {
	namespace := newNamespace(t)
	port := freeDoormanPort(t)
	createMW(t, namespace, port, napwakev1alpha1.PhasePaused, time.Now().Add(-time.Hour))
	st := startDoorman(t, clock.RealClock{})

	pod, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pod.Close()
	got := make(chan string, 1)
	go func() {
		c, err := pod.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 64)
		n, _ := io.ReadAtLeast(c, b, len("GET /api HTTP/1.1\r\nHost: api\r\n\r\n"))
		got <- string(b[:n])
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"))
	}()

	c := dialPort(t, port)
	req := "GET /api HTTP/1.1\r\nHost: api\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	var mw napwakev1alpha1.ManagedWorkload
	testenv.EventuallyTrue(t, "last-request on the ManagedWorkload", func() bool {
		_ = k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "api"}, &mw)
		return mw.Annotations[napwakev1alpha1.AnnotationLastRequest] != ""
	})
	if from := mw.Annotations[napwakev1alpha1.AnnotationLastRequestFrom]; from != "127.0.0.1" {
		t.Fatalf("last-request-from %q, want the caller", from)
	}
	if at, err := time.Parse(time.RFC3339, mw.Annotations[napwakev1alpha1.AnnotationLastRequest]); err != nil || time.Since(at) > time.Minute || !strings.HasSuffix(mw.Annotations[napwakev1alpha1.AnnotationLastRequest], "Z") {
		t.Fatalf("last-request %q is not a recent RFC 3339 UTC time", mw.Annotations[napwakev1alpha1.AnnotationLastRequest])
	}
	testenv.EventuallyTrue(t, "the WokenByRequest event", func() bool {
		ev := events(t, namespace, napwakev1alpha1.EventWokenByRequest)
		return len(ev) == 1 && strings.Contains(ev[0].Message, "Service api") && ev[0].InvolvedObject.Kind == "ManagedWorkload"
	})

	// A slice someone else manages is never dialled.
	readyPod(t, namespace, "api-fake", "10.244.0.9", pod.Addr().(*net.TCPAddr).Port, "someone-else")
	time.Sleep(300 * time.Millisecond) // give a wrong pass the chance to happen
	select {
	case s := <-got:
		t.Fatalf("the pod got %q through a slice the EndpointSlice controller doesn't manage", s)
	default:
	}

	readyPod(t, namespace, "api-1", "10.244.0.5", pod.Addr().(*net.TCPAddr).Port, napwakev1alpha1.EndpointSliceControllerManager)
	select {
	case s := <-got:
		if s != req {
			t.Fatalf("pod got %q, want %q", s, req)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held request never reached the Ready pod")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(c); string(b) != "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi" {
		t.Fatalf("caller got %q", b)
	}
	_ = st
}

func TestTurnedAwayIsCountedPerPauseAndSummedAcrossPods(t *testing.T) {
	namespace := newNamespace(t)
	pausedAt := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	createMW(t, namespace, freeDoormanPort(t), napwakev1alpha1.PhasePaused, pausedAt)
	w := proxy.Workload{Namespace: namespace, Name: "api", PausedAt: pausedAt}
	recorder := record.NewFakeRecorder(10)
	podA := NewHooks(k8s, recorder, clock.RealClock{}, logr.Discard())
	podB := NewHooks(k8s, recorder, clock.RealClock{}, logr.Discard())
	for range 3 {
		podA.TurnedAway(w)
	}
	for range 2 {
		podB.TurnedAway(w)
	}
	old := w
	old.PausedAt = pausedAt.Add(-24 * time.Hour)
	podB.TurnedAway(old) // a pause that is over: dropped
	ctx := context.Background()
	podA.FlushTurnedAway(ctx)
	podB.FlushTurnedAway(ctx)
	var mw napwakev1alpha1.ManagedWorkload
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "api"}, &mw); err != nil {
		t.Fatal(err)
	}
	if got, want := mw.Annotations[napwakev1alpha1.AnnotationTurnedAway], napwakev1alpha1.FormatTurnedAway(pausedAt, 5); got != want {
		t.Fatalf("turned-away %q, want %q", got, want)
	}
	// A new pause starts the count again.
	newPause := pausedAt.Add(30 * time.Minute)
	mw.Status.Pause.StartedAt = metav1.NewTime(newPause)
	if err := k8s.Status().Update(ctx, &mw); err != nil {
		t.Fatal(err)
	}
	w.PausedAt = newPause
	podA.TurnedAway(w)
	podA.FlushTurnedAway(ctx)
	_ = k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "api"}, &mw)
	if got, want := mw.Annotations[napwakev1alpha1.AnnotationTurnedAway], napwakev1alpha1.FormatTurnedAway(newPause, 1); got != want {
		t.Fatalf("turned-away after a new pause %q, want %q", got, want)
	}
}

func TestAStaleResourceVersionKeepsTheCountForTheNextFlush(t *testing.T) {
	namespace := newNamespace(t)
	pausedAt := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	createMW(t, namespace, freeDoormanPort(t), napwakev1alpha1.PhasePaused, pausedAt)
	h := NewHooks(k8s, record.NewFakeRecorder(10), clock.RealClock{}, logr.Discard())
	ctx := context.Background()
	key := turnedKey{workload: client.ObjectKey{Namespace: namespace, Name: "api"}, pausedAt: pausedAt}
	var mw napwakev1alpha1.ManagedWorkload
	_ = k8s.Get(ctx, key.workload, &mw)
	orig := mw.DeepCopy()
	mw.Annotations = map[string]string{napwakev1alpha1.AnnotationTurnedAway: napwakev1alpha1.FormatTurnedAway(pausedAt, 1)}
	orig.ResourceVersion = "1" // stale
	err := k8s.Patch(ctx, &mw, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err == nil {
		t.Skip("the API server accepted a stale resourceVersion") // never expected
	}
	h.TurnedAway(proxy.Workload{Namespace: namespace, Name: "api", PausedAt: pausedAt})
	h.FlushTurnedAway(ctx)
	_ = k8s.Get(ctx, key.workload, &mw)
	if got := mw.Annotations[napwakev1alpha1.AnnotationTurnedAway]; got != napwakev1alpha1.FormatTurnedAway(pausedAt, 1) {
		t.Fatalf("turned-away %q", got)
	}
}

func TestRequestNotServedAtMostOnceAMinutePerWorkload(t *testing.T) {
	namespace := newNamespace(t)
	createMW(t, namespace, freeDoormanPort(t), napwakev1alpha1.PhasePaused, time.Now().Add(-time.Hour))
	fc := clocktesting.NewFakeClock(time.Now())
	recorder := record.NewFakeRecorder(10)
	h := NewHooks(k8s, recorder, fc, logr.Discard())
	w := proxy.Workload{Namespace: namespace, Name: "api"}
	h.NotServed(w, "api", 2*time.Minute, "no pod was Ready within maxWait")
	h.NotServed(w, "api", 2*time.Minute, "no pod was Ready within maxWait")
	fc.Step(59 * time.Second)
	h.NotServed(w, "api", 2*time.Minute, "again")
	fc.Step(time.Second)
	h.NotServed(w, "api", 90*time.Second, "the woken pods could not be reached")
	close(recorder.Events)
	var got []string
	for e := range recorder.Events {
		got = append(got, e)
	}
	want := []string{
		"Warning RequestNotServed A request to Service api was held 2m0s and not served: no pod was Ready within maxWait",
		"Warning RequestNotServed A request to Service api was held 1m30s and not served: the woken pods could not be reached",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRoutesCarryTheWakeSettings(t *testing.T) {
	mw := napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "ns"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{Wake: napwakev1alpha1.WakeSpec{Mode: napwakev1alpha1.WakeAsk, Page: ptr.To(false), MaxWait: &metav1.Duration{Duration: 5 * time.Minute}}},
		Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseResuming, ResumedAt: ptr.To(metav1.NewTime(time.Unix(100, 0))),
			Doorman: &napwakev1alpha1.DoormanStatus{Routes: []napwakev1alpha1.Route{{Service: "api", PortName: "http", Port: 80, DoormanPort: 20017}}}}}
	routes, conflicts := Routes([]napwakev1alpha1.ManagedWorkload{mw, {ObjectMeta: metav1.ObjectMeta{Name: "unrouted"}}})
	if len(routes) != 1 || len(conflicts) != 0 {
		t.Fatalf("routes %v", routes)
	}
	r := routes[0]
	if r.DoormanPort != 20017 || r.Service != "api" || r.PortName != "http" || !r.Workload.Ask || r.Workload.Page ||
		r.Workload.MaxWait != 5*time.Minute || r.Workload.Phase != "Resuming" || !r.Workload.ResumedAt.Equal(time.Unix(100, 0)) {
		t.Fatalf("route %+v", r)
	}
	def := WorkloadOf(&napwakev1alpha1.ManagedWorkload{})
	if !def.Page || def.Ask {
		t.Fatalf("defaults: page true, mode Request; got %+v", def)
	}
	overrides := WorkloadOf(&napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		napwakev1alpha1.AnnotationPauseUntil: "2026-10-23T20:00:00+02:00", napwakev1alpha1.AnnotationKeepAwakeUntil: "soon",
	}}})
	if !overrides.PauseUntil.Equal(time.Date(2026, 10, 23, 18, 0, 0, 0, time.UTC)) || !overrides.KeepAwakeUntil.IsZero() {
		t.Fatalf("pause-until %v keep-awake-until %v, want 18:00 UTC and none (unreadable)", overrides.PauseUntil, overrides.KeepAwakeUntil)
	}
	_ = netip.Addr{}
}
