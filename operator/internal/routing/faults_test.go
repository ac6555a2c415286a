package routing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// errRefused stands for a status write the API server refused (or never
// answered): the write is not made.
var errRefused = errors.New("status write refused")

// hookedClient is the real client whose every write goes through hook,
// named "create", "update", "patch", "delete", "status-patch" or
// "status-update"; hook makes the write by calling write, or does not.
type hookedClient struct {
	client.Client
	hook func(name string, write func() error) error
}

func (h *hookedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return h.hook("create", func() error { return h.Client.Create(ctx, obj, opts...) })
}

func (h *hookedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return h.hook("update", func() error { return h.Client.Update(ctx, obj, opts...) })
}

func (h *hookedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return h.hook("patch", func() error { return h.Client.Patch(ctx, obj, patch, opts...) })
}

func (h *hookedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return h.hook("delete", func() error { return h.Client.Delete(ctx, obj, opts...) })
}

func (h *hookedClient) Status() client.SubResourceWriter {
	return &hookedStatus{SubResourceWriter: h.Client.Status(), h: h}
}

type hookedStatus struct {
	client.SubResourceWriter
	h *hookedClient
}

func (s *hookedStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.h.hook("status-patch", func() error { return s.SubResourceWriter.Patch(ctx, obj, patch, opts...) })
}

func (s *hookedStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.h.hook("status-update", func() error { return s.SubResourceWriter.Update(ctx, obj, opts...) })
}

// refuser refuses the next n status patches: they fail and are not made.
type refuser struct {
	mu     sync.Mutex
	refuse int
}

func (r *refuser) refuseNext(n int) {
	r.mu.Lock()
	r.refuse = n
	r.mu.Unlock()
}

func (r *refuser) hook(name string, write func() error) error {
	r.mu.Lock()
	refuse := name == "status-patch" && r.refuse > 0
	if refuse {
		r.refuse--
	}
	r.mu.Unlock()
	if refuse {
		return errRefused
	}
	return write()
}

// routedAPI routes a paused workload api, its Service api of ports, through
// a Router whose status patches the returned refuser can refuse.
func (f *fixture) routedAPI(ports ...corev1.ServicePort) (*Router, *refuser, *napwakev1alpha1.ManagedWorkload, *corev1.Service) {
	f.t.Helper()
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	svc := f.service("api", withPorts(ports...))
	mw := f.pausing("api")
	ref := &refuser{}
	r, err := New(&hookedClient{Client: k8s, hook: ref.hook}, k8s, Options{DoormanService: doormanNS + "/" + f.doorman, Dial: f.pods.dial, ListenTimeout: 3 * time.Second}, f.clock, recorder)
	f.g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(mw.Status.Doorman.Routes).To(HaveLen(len(ports)))
	return r, ref, mw, svc
}

func (r *Router) ownerOf(p int32) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.alloc.Owner(p)
	return k.String(), ok
}

// TestAPortStaysClaimedWhenTheWriteGivingItUpFails: a wake whose status
// write fails leaves the route, and so its port, in status; the allocator
// must go on counting the port as the workload's (else, once the hold is
// over, it would hand it to another workload while this one's status still
// claims it), and the retry that succeeds releases it with its hold.
func TestAPortStaysClaimedWhenTheWriteGivingItUpFails(t *testing.T) {
	f := newFixture(t)
	r, c, mw, _ := f.routedAPI(tcpPorts(1)...)
	port := mw.Status.Doorman.Routes[0].DoormanPort

	c.refuseNext(1)
	_, err := r.Unroute(f.ctx, mw)
	f.g.Expect(err).To(MatchError(errRefused))
	f.g.Expect(f.get(mw).Status.Doorman.Routes).To(HaveLen(1), "the failed write left the route in status")
	f.clock.Step(2 * time.Minute) // past any hold the failed release could have set
	owner, ok := r.ownerOf(port)
	f.g.Expect(ok).To(BeTrue(), "port %d released in memory though its status still claims it", port)
	f.g.Expect(owner).To(Equal(f.ns + "/api"))

	_, err = r.Unroute(f.ctx, f.get(mw))
	f.g.Expect(err).NotTo(HaveOccurred())
	_, ok = r.ownerOf(port)
	f.g.Expect(ok).To(BeFalse(), "released once the write succeeded")
	got := f.get(mw)
	f.g.Expect(got.Status.Doorman.Routes).To(BeEmpty())
	f.g.Expect(got.Status.Doorman.PortHolds).To(ConsistOf(napwakev1alpha1.PortHold{Port: port, Until: got.Status.Doorman.PortHolds[0].Until}))
	f.g.Expect(got.Status.Doorman.PortHolds[0].Until.Time).To(BeTemporally("==", f.clock.Now().Add(time.Minute)))
}

// TestARouteMoveWhoseWriteFailsKeepsTheOldPortClaimed: a Service port
// dropped while paused gives up its doorman port only once the status
// without it is written; after a failed write both the port given up and
// the one kept stay the workload's, and a retry converges on the status.
func TestARouteMoveWhoseWriteFailsKeepsTheOldPortClaimed(t *testing.T) {
	f := newFixture(t)
	r, c, mw, svc := f.routedAPI(tcpPorts(2)...)
	kept, dropped := mw.Status.Doorman.Routes[0].DoormanPort, mw.Status.Doorman.Routes[1].DoormanPort

	svc.Spec.Ports = svc.Spec.Ports[:1]
	f.g.Expect(k8s.Update(f.ctx, svc)).To(Succeed())
	c.refuseNext(1)
	_, err := r.Route(f.ctx, mw, template(true))
	f.g.Expect(err).To(MatchError(errRefused))
	f.clock.Step(2 * time.Minute)
	for _, p := range []int32{kept, dropped} {
		owner, ok := r.ownerOf(p)
		f.g.Expect(ok).To(BeTrue(), "port %d released in memory before its write", p)
		f.g.Expect(owner).To(Equal(f.ns + "/api"))
	}

	_, err = r.Route(f.ctx, f.get(mw), template(true))
	f.g.Expect(err).NotTo(HaveOccurred())
	got := f.get(mw)
	f.g.Expect(got.Status.Doorman.Routes).To(HaveLen(1))
	f.g.Expect(got.Status.Doorman.Routes[0].DoormanPort).To(Equal(kept))
	_, ok := r.ownerOf(dropped)
	f.g.Expect(ok).To(BeFalse())
	f.g.Expect(got.Status.Doorman.PortHolds).To(HaveLen(1))
	f.g.Expect(got.Status.Doorman.PortHolds[0].Port).To(Equal(dropped))
	r.mu.Lock()
	f.g.Expect(r.alloc.Owned(keyOf(got))).To(Equal([]int32{kept}))
	r.mu.Unlock()
}

// gate lets the writes of a Router through one at a time, when the test
// says: the test runs two Routers at once, alternates their writes and
// checks the persisted statuses after each.
type gate struct {
	waiting chan struct{} // a write wants to go
	proceed chan struct{} // it may
	done    chan struct{} // it went
	// closed lets writes through unasked until the test shuts the gate
	// (the seed's adoption of claims another test's statuses lack).
	closed bool
}

func newGate() *gate {
	return &gate{waiting: make(chan struct{}), proceed: make(chan struct{}), done: make(chan struct{})}
}

func (g *gate) hook(_ string, write func() error) error {
	if !g.closed {
		return write()
	}
	g.waiting <- struct{}{}
	<-g.proceed
	defer func() { g.done <- struct{}{} }()
	return write()
}

// alwaysListening stands in for doorman pods listening on every port.
func alwaysListening(context.Context, string, string) (net.Conn, error) {
	c, peer := net.Pipe()
	_ = peer.Close()
	return c, nil
}

// noPortTwice fails if a doorman port is in two workloads' routes in the
// namespace.
func (f *fixture) noPortTwice(when string) {
	f.t.Helper()
	var list napwakev1alpha1.ManagedWorkloadList
	f.g.Expect(k8s.List(f.ctx, &list, client.InNamespace(f.ns))).To(Succeed())
	by := map[int32]string{}
	for _, mw := range list.Items {
		for _, rt := range routesOf(&mw) {
			if other, twice := by[rt.DoormanPort]; twice && other != mw.Name {
				f.t.Fatalf("%s: doorman port %d in the routes of both %s and %s", when, rt.DoormanPort, other, mw.Name)
			}
			by[rt.DoormanPort] = mw.Name
		}
	}
}

// TestTwoLeadersNeverHandOnePortToTwoWorkloads: two Routers whose leases
// overlap (an old leader still reconciling while the new one starts), each
// with its own allocator seeded from the same statuses, route two
// workloads at once, their API writes interleaved one by one. Both would
// take the same first free port; no persisted status may ever name a port
// another does, checked after every write, and both end routed.
func TestTwoLeadersNeverHandOnePortToTwoWorkloads(t *testing.T) {
	for _, first := range []int{0, 1} {
		t.Run(fmt.Sprintf("router %d writes first", first), func(t *testing.T) {
			f := newFixture(t)
			f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
			var (
				gates   [2]*gate
				routers [2]*Router
				mws     [2]*napwakev1alpha1.ManagedWorkload
				tmpls   [2]*corev1.PodTemplateSpec
			)
			for i := range 2 {
				name := fmt.Sprintf("api%d", i)
				labels := map[string]string{"app": name}
				f.service(name, func(s *corev1.Service) { s.Spec.Selector = labels; s.Spec.Ports = tcpPorts(2) })
				mws[i] = f.pausing(name)
				tmpls[i] = template(true)
				tmpls[i].Labels = labels
				gates[i] = newGate()
				r, err := New(&hookedClient{Client: k8s, hook: gates[i].hook}, k8s, Options{DoormanService: doormanNS + "/" + f.doorman, Dial: alwaysListening, ListenTimeout: 3 * time.Second}, f.clock, recorder)
				f.g.Expect(err).NotTo(HaveOccurred())
				f.g.Expect(r.seed(f.ctx)).To(Succeed(), "seeded before either writes")
				gates[i].closed = true
				routers[i] = r
			}
			finished := [2]chan error{make(chan error, 1), make(chan error, 1)}
			for i := range 2 {
				go func() {
					_, err := routers[i].Route(f.ctx, mws[i], tmpls[i])
					finished[i] <- err
				}()
			}
			var errs [2]error
			over := [2]bool{}
			for turn, writes := first, 0; !over[0] || !over[1]; turn = 1 - turn {
				if over[turn] {
					continue
				}
				select {
				case <-gates[turn].waiting:
					gates[turn].proceed <- struct{}{}
					<-gates[turn].done
					writes++
					f.noPortTwice(fmt.Sprintf("after write %d (router %d)", writes, turn))
				case errs[turn] = <-finished[turn]:
					over[turn] = true
				}
			}
			for i := range 2 {
				f.g.Expect(errs[i]).NotTo(HaveOccurred())
				got := f.get(mws[i])
				f.g.Expect(routesOf(got)).To(HaveLen(2), "%s routed", got.Name)
				f.g.Expect(wakeOnRequest(got).Reason).To(Equal(napwakev1alpha1.ReasonDoormanRouted))
			}
			f.noPortTwice("at the end")
		})
	}
}

// claimOf reads who claims port p: the claiming workload's UID and the
// resourceVersion its claim names.
func (f *fixture) claimOf(p int32) (uid, version string) {
	f.t.Helper()
	var l coordinationv1.Lease
	f.g.Expect(k8s.Get(f.ctx, client.ObjectKey{Namespace: doormanNS, Name: claimPrefix + fmt.Sprint(p)}, &l)).To(Succeed())
	return l.Annotations[annotationClaimUID], l.Annotations[annotationClaimVersion]
}

// TestAPortClaimStandsUntilItsWriteCanNoLongerLand: a claim stands while
// its workload names the port, or is still at the claimed resourceVersion
// (its status write may yet land); once the workload moved on without the
// port, or is gone, another workload takes the claim over.
func TestAPortClaimStandsUntilItsWriteCanNoLongerLand(t *testing.T) {
	f := newFixture(t)
	r := f.router()
	const port = int32(29999) // the range's last: no other test reaches it
	a, b := f.pausing("a"), f.pausing("b")
	took, err := r.claimOne(f.ctx, a, port)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(took).To(BeTrue())

	took, err = r.claimOne(f.ctx, b, port)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(took).To(BeFalse(), "a's status write at the claimed version may still land")

	base := a.DeepCopy()
	a.Status.Phase = napwakev1alpha1.PhasePaused // a moves on, its routes without the port
	f.g.Expect(k8s.Status().Patch(f.ctx, a, client.MergeFrom(base))).To(Succeed())
	took, err = r.claimOne(f.ctx, b, port)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(took).To(BeTrue(), "a write at a's claimed version can no longer land")
	uid, version := f.claimOf(port)
	f.g.Expect(uid).To(Equal(string(b.UID)))
	f.g.Expect(version).To(Equal(b.ResourceVersion))

	f.g.Expect(k8s.Delete(f.ctx, b)).To(Succeed())
	took, err = r.claimOne(f.ctx, a, port)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(took).To(BeTrue(), "b is gone")
	uid, _ = f.claimOf(port)
	f.g.Expect(uid).To(Equal(string(a.UID)))
}

// TestAPortAStatusNamesWithoutAClaimIsClaimedAtSeed: a status written by a
// version before port claims names a port no Lease claims. A Router
// seeded before that status was written (an overlapping leader) finds the
// port free; once another Router has seeded, the port is claimed for the
// workload that names it, and the stale Router cannot claim it for
// another. A second seed leaves the claim as it is.
func TestAPortAStatusNamesWithoutAClaimIsClaimedAtSeed(t *testing.T) {
	f := newFixture(t)
	const port = int32(29998) // the range's last but one: no other test reaches it
	stale := f.router()
	f.g.Expect(stale.seed(f.ctx)).To(Succeed())

	old, other := f.pausing("old"), f.pausing("other")
	base := old.DeepCopy()
	old.Status.Doorman = &napwakev1alpha1.DoormanStatus{Routes: []napwakev1alpha1.Route{{Service: "old", Port: 80, DoormanPort: port}}}
	f.g.Expect(k8s.Status().Patch(f.ctx, old, client.MergeFrom(base))).To(Succeed())
	var l coordinationv1.Lease
	key := client.ObjectKey{Namespace: doormanNS, Name: claimPrefix + fmt.Sprint(port)}
	f.g.Expect(apierrors.IsNotFound(k8s.Get(f.ctx, key, &l))).To(BeTrue(), "no claim before any Router seeds")

	f.g.Expect(f.router().seed(f.ctx)).To(Succeed())
	uid, _ := f.claimOf(port)
	f.g.Expect(uid).To(Equal(string(old.UID)), "adopted for the workload whose status names it")
	f.g.Expect(k8s.Get(f.ctx, key, &l)).To(Succeed())
	f.g.Expect(l.Spec.HolderIdentity).To(HaveValue(Equal(f.ns + "/old")))

	took, err := stale.claimOne(f.ctx, other, port)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(took).To(BeFalse(), "the stale Router may not hand the port to another workload")

	rv := l.ResourceVersion
	f.g.Expect(f.router().seed(f.ctx)).To(Succeed())
	f.g.Expect(k8s.Get(f.ctx, key, &l)).To(Succeed())
	f.g.Expect(l.ResourceVersion).To(Equal(rv), "a claim that exists is left alone")
}
