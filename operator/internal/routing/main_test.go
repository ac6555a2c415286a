package routing

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
)

var (
	cfg      *rest.Config
	k8s      client.Client
	scheme   = runtime.NewScheme()
	recorder *countingRecorder
)

const doormanNS = "napwake-system"

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, setup))
}

// setup makes the client, the doorman's namespace and the events recorder
// every test shares.
func setup(s *testenv.Suite) (err error) {
	cfg = s.Config
	ctrllog.SetLogger(logr.Discard())
	_ = clientgoscheme.AddToScheme(scheme)
	_ = napwakev1alpha1.AddToScheme(scheme)
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doormanNS}}); err != nil {
		return err
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	stop := make(chan struct{})
	b.StartRecordingToSink(stop)
	s.Cleanup(func() { close(stop); b.Shutdown() })
	recorder = &countingRecorder{EventRecorder: b.NewRecorder(scheme, "napwake-routing-test"), calls: map[string]int{}}
	return nil
}

// fixture is one test's namespace, doorman Service and stand-in doorman pods.
type fixture struct {
	t       testing.TB
	g       Gomega
	ctx     context.Context
	ns      string
	doorman string // the doorman Service's name, one per test
	clock   *clocktesting.FakeClock
	pods    *standIns
}

var nsSeq int

func newFixture(t *testing.T) *fixture {
	t.Helper()
	nsSeq++
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{
		t: t, g: NewWithT(t), ctx: ctx,
		ns:    fmt.Sprintf("routing-t%d", nsSeq),
		clock: clocktesting.NewFakeClock(time.Date(2026, 10, 23, 18, 4, 12, 0, time.UTC)),
		pods:  newStandIns(t),
	}
	f.doorman = "doorman-" + f.ns
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}})
	// On f.g itself: NewWithT copies the defaults when it is made, so the
	// package-level setters came too late and left the 1 s default, which a
	// busy CI machine can outlast while every slice is rewritten.
	f.g.SetDefaultEventuallyTimeout(testenv.EventuallyTimeout)
	f.g.SetDefaultEventuallyPollingInterval(testenv.EventuallyInterval)
	return f
}

func (f *fixture) create(o client.Object) {
	f.t.Helper()
	f.g.Expect(k8s.Create(f.ctx, o)).To(Succeed())
}

// router returns a Router on a direct client (no cache), for tests that
// call Route/Unroute/Finalize themselves.
func (f *fixture) router(mod ...func(*Options)) *Router {
	f.t.Helper()
	opts := Options{DoormanService: doormanNS + "/" + f.doorman, Dial: f.pods.dial, ListenTimeout: 3 * time.Second}
	for _, m := range mod {
		m(&opts)
	}
	r, err := New(k8s, k8s, opts, f.clock, recorder)
	f.g.Expect(err).NotTo(HaveOccurred())
	return r
}

// doormanPod is a stand-in doorman pod: its address in the doorman
// Service's slices, and whether it is Ready.
type doormanPod struct {
	name  string
	ip    string
	ready bool
}

// setDoormen writes the doorman Service's EndpointSlices, as Kubernetes'
// EndpointSlice controller would, one per address family.
func (f *fixture) setDoormen(pods ...doormanPod) {
	f.t.Helper()
	byFam := map[discoveryv1.AddressType][]discoveryv1.Endpoint{discoveryv1.AddressTypeIPv4: nil, discoveryv1.AddressTypeIPv6: nil}
	for _, p := range pods {
		fam := discoveryv1.AddressTypeIPv4
		if strings.Contains(p.ip, ":") {
			fam = discoveryv1.AddressTypeIPv6
		}
		byFam[fam] = append(byFam[fam], discoveryv1.Endpoint{
			Addresses:  []string{p.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(p.ready)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: doormanNS, Name: p.name},
			NodeName:   ptr.To("node-1"),
		})
	}
	for fam, eps := range byFam {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: f.doorman + "-" + strings.ToLower(string(fam)), Namespace: doormanNS, Labels: map[string]string{
				napwakev1alpha1.LabelServiceName:            f.doorman,
				napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceControllerManager,
			}, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: f.doorman, UID: "doorman-service-uid", Controller: ptr.To(true)}}},
			AddressType: fam,
			Endpoints:   eps,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To(int32(8443))}},
		}
		var have discoveryv1.EndpointSlice
		if err := k8s.Get(f.ctx, client.ObjectKeyFromObject(s), &have); err == nil {
			have.Endpoints = eps
			f.g.Expect(k8s.Update(f.ctx, &have)).To(Succeed())
			continue
		}
		f.create(s)
	}
}

// standIns are listeners standing in for doorman pods: each pod IP maps
// to its own loopback address (127.0.0.50 and up), and a stand-in listens
// on every doorman port in any ManagedWorkload's routes, as the doorman does.
type standIns struct {
	t        testing.TB
	mu       sync.Mutex
	loopback map[string]string       // pod IP -> 127.0.0.x
	open     map[string]net.Listener // 127.0.0.x:port -> listener
	deaf     map[string]bool         // pod IPs that never listen
	dials    map[string]int          // 127.0.0.x:port -> connections accepted
	next     int
}

func newStandIns(t testing.TB) *standIns {
	t.Helper()
	s := &standIns{t: t, loopback: map[string]string{}, open: map[string]net.Listener{}, deaf: map[string]bool{}, dials: map[string]int{}, next: 50}
	t.Cleanup(s.closeAll)
	return s
}

func (s *standIns) addr(podIP string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.loopback[podIP]; ok {
		return a
	}
	s.next++
	s.loopback[podIP] = "127.0.0." + strconv.Itoa(s.next)
	return s.loopback[podIP]
}

// dial is the Router's dialer in tests: a pod IP goes to its loopback
// address.
func (s *standIns) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort(s.addr(host), port))
}

// serve keeps every non-deaf stand-in listening on every routed doorman
// port, until the test ends.
func (s *standIns) serve(ctx context.Context, pods ...string) {
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var list napwakev1alpha1.ManagedWorkloadList
			if err := k8s.List(ctx, &list); err == nil {
				for _, mw := range list.Items {
					for _, r := range routesOf(&mw) {
						for _, p := range pods {
							s.listen(p, r.DoormanPort)
						}
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

func (s *standIns) listen(podIP string, port int32) {
	a := net.JoinHostPort(s.addr(podIP), strconv.Itoa(int(port)))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deaf[podIP] || s.open[a] != nil {
		return
	}
	l, err := net.Listen("tcp", a)
	if err != nil {
		return
	}
	s.open[a] = l
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.dials[a]++
			s.mu.Unlock()
			_ = c.Close()
		}
	}()
}

func (s *standIns) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.open {
		_ = l.Close()
	}
}

// countingRecorder is the real events recorder, counting the calls made
// for each object and reason: the events API folds repeats of one event
// into a series it writes back only every 30 minutes, so the API server
// alone cannot show that an event was raised once.
type countingRecorder struct {
	events.EventRecorder
	mu    sync.Mutex
	calls map[string]int // namespace/name/reason
}

func (r *countingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if o, ok := regarding.(client.Object); ok {
		r.mu.Lock()
		r.calls[o.GetNamespace()+"/"+o.GetName()+"/"+reason]++
		r.mu.Unlock()
	}
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// count returns how often reason was raised on o.
func (r *countingRecorder) count(o client.Object, reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[o.GetNamespace()+"/"+o.GetName()+"/"+reason]
}

// routedBehind sets the doorman pods (serving on their ports), creates the
// Deployment api, its Service api and its pausing ManagedWorkload, makes
// the Router with newRouter and routes api through it.
func (f *fixture) routedBehind(newRouter func() *Router, pods ...doormanPod) *Router {
	f.t.Helper()
	f.setDoormen(pods...)
	ips := make([]string, 0, len(pods))
	for _, p := range pods {
		ips = append(ips, p.ip)
	}
	f.pods.serve(f.ctx, ips...)
	tmpl := f.deployment()
	f.service("api")
	mw := f.pausing("api")
	r := newRouter()
	_, err := r.Route(f.ctx, mw, tmpl)
	f.g.Expect(err).NotTo(HaveOccurred())
	return r
}
