package routing

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing/plan"
	"napwake.dev/operator/internal/routing/ports"
)

// Port claims: one Lease per doorman port, the API server's guard against
// two Routers handing one port to two workloads.
//
// Each Router's allocator is its own, seeded from the statuses it read at
// start, so two Routers whose leader leases overlap (the old leader still
// reconciling while the new one starts) can both find a port free. Before
// a status names a new port, the Router therefore creates the port's
// Lease, napwake-doorman-port-<port> in the doorman's namespace, naming the
// workload (holderIdentity namespace/name, its UID) and the resourceVersion
// of the status the write is guarded by. A name can be created once: the
// second Router finds the Lease and takes another port. And that status
// write is never retried on a fresh copy (writeStatus): if the workload
// changed since, the claim is made again at its new resourceVersion.
//
// A Lease outlives its use: a deleted workload's go once its ports' holds
// are over (dropClaims, from Finalize); others are taken over when their
// port is wanted again
// and its claim is over, that is, its workload is gone (or another of the
// name), or names the port neither in its routes nor in a hold not yet
// over, and is no longer at the claim's resourceVersion (so the write the
// claim was made for can no longer succeed). A Lease is deleted only with
// its resourceVersion as a precondition, so a claim renewed meanwhile
// stands.

const (
	// claimPrefix names a port's Lease: napwake-doorman-port-20000.
	claimPrefix = "napwake-doorman-port-"
	// labelClaimPort carries the port on its Lease.
	labelClaimPort = "napwake.dev/doorman-port"
	// annotationClaimUID and annotationClaimVersion are the claiming
	// workload's UID and the resourceVersion its status write is guarded by.
	annotationClaimUID     = "napwake.dev/claim-uid"
	annotationClaimVersion = "napwake.dev/claim-resource-version"
)

// errStaleClaim: a status write adding ports met a newer workload than
// the one its claims name; Route makes them afresh.
var errStaleClaim = errors.New("the workload changed since its doorman ports were claimed")

// claim claims each new port for mw at its resourceVersion and returns,
// sorted, those another workload's claim holds.
func (r *Router) claim(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, fresh map[int32]bool) ([]int32, error) {
	ps := make([]int32, 0, len(fresh))
	for p := range fresh {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	var taken []int32
	for _, p := range ps {
		ok, err := r.claimOne(ctx, mw, p)
		if err != nil {
			return taken, err
		}
		if !ok {
			taken = append(taken, p)
		}
	}
	return taken, nil
}

// claimOne claims port p for mw; false when another workload holds it.
func (r *Router) claimOne(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, p int32) (bool, error) {
	for range 3 { // a claim taken over or renewed under us: look again
		want := r.claimLease(mw, p)
		err := r.c.Create(ctx, want)
		if err == nil {
			return true, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("claiming doorman port %d: %w", p, err)
		}
		var have coordinationv1.Lease
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(want), &have); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return false, fmt.Errorf("reading doorman port %d's claim: %w", p, err)
		}
		if have.Annotations[annotationClaimUID] == string(mw.UID) {
			if have.Annotations[annotationClaimVersion] == mw.ResourceVersion {
				return true, nil
			}
			have.Annotations[annotationClaimVersion] = mw.ResourceVersion
			err := r.c.Update(ctx, &have)
			if err == nil {
				return true, nil
			}
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue
			}
			return false, fmt.Errorf("renewing doorman port %d's claim: %w", p, err)
		}
		live, err := r.claimLive(ctx, &have, p)
		if err != nil || live {
			return false, err
		}
		err = r.c.Delete(ctx, &have, client.Preconditions{UID: &have.UID, ResourceVersion: &have.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("taking over doorman port %d's claim: %w", p, err)
		}
	}
	return false, nil
}

func (r *Router) claimLease(mw *napwakev1alpha1.ManagedWorkload, p int32) *coordinationv1.Lease {
	port := strconv.Itoa(int(p))
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: claimPrefix + port, Namespace: r.doorman.Namespace,
			Labels:      map[string]string{labelClaimPort: port},
			Annotations: map[string]string{annotationClaimUID: string(mw.UID), annotationClaimVersion: mw.ResourceVersion},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(klogKey(mw))},
	}
}

// claimLive says whether a claim on port p still stands (see the comment
// at the top of this file).
func (r *Router) claimLive(ctx context.Context, l *coordinationv1.Lease, p int32) (bool, error) {
	ns, name, _ := strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "/")
	var holder napwakev1alpha1.ManagedWorkload
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &holder); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading ManagedWorkload %s/%s, which claimed doorman port %d: %w", ns, name, p, err)
	}
	if string(holder.UID) != l.Annotations[annotationClaimUID] {
		return false, nil
	}
	for _, rt := range routesOf(&holder) {
		if rt.DoormanPort == p {
			return true, nil
		}
	}
	now := r.clock.Now()
	for _, h := range holdsOf(&holder) {
		if h.Port == p && h.Until.After(now) {
			return true, nil
		}
	}
	return holder.ResourceVersion == l.Annotations[annotationClaimVersion], nil
}

// allocateClaimed allocates the wanted routes' ports and claims the new
// ones; a port another workload's claim holds is set aside for a hold and
// the routes allocated again. allocErr is the allocator's (no free port,
// too many); err a claim the API server refused.
func (r *Router) allocateClaimed(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, wants []plan.Want, old []napwakev1alpha1.Route, now time.Time) (routes []napwakev1alpha1.Route, released []ports.Hold, allocErr, err error) {
	for range 4 { // each round sets the taken ports aside; they are few
		routes, released, allocErr = r.allocate(mw, wants, old, now)
		if allocErr != nil {
			return routes, released, allocErr, nil
		}
		taken, err := r.claim(ctx, mw, newPorts(routes, routesOf(mw)))
		if err != nil || len(taken) == 0 {
			return routes, released, nil, err
		}
		r.mu.Lock()
		r.alloc.Forgo(keyOf(mw), taken, now.Add(r.opts.PortHold))
		r.mu.Unlock()
	}
	return nil, nil, nil, errors.New("claiming doorman ports: each port tried is claimed by another workload")
}

// portsNamed are the ports mw's status names, in routes or holds.
func portsNamed(mw *napwakev1alpha1.ManagedWorkload) map[int32]bool {
	out := map[int32]bool{}
	for _, rt := range routesOf(mw) {
		out[rt.DoormanPort] = true
	}
	for _, h := range holdsOf(mw) {
		out[h.Port] = true
	}
	return out
}

// adoptClaims creates the claim of each port a status names (in routes
// or holds) that has none, for the workload whose status keeps it (the
// seed's kept): a version before port claims wrote such statuses. Until a
// claim exists, a Router whose allocator was seeded before that status
// was written (an overlapping leader) can find the port free and create
// its claim for another workload; once one exists, claimLive sees the
// port in its holder's routes and refuses it. Existing claims are left as
// they are (one naming another workload is judged when that port is next
// wanted), so a seed costs one List and a Create per port without a claim.
func (r *Router) adoptClaims(ctx context.Context, kept map[*napwakev1alpha1.ManagedWorkload]map[int32]bool) error {
	if r.doorman.Namespace == "" || len(kept) == 0 {
		return nil
	}
	var leases coordinationv1.LeaseList
	if err := r.reader.List(ctx, &leases, client.InNamespace(r.doorman.Namespace), client.HasLabels{labelClaimPort}); err != nil {
		return fmt.Errorf("listing the doorman port claims to adopt the ports of statuses without one: %w", err)
	}
	claimed := make(map[string]bool, len(leases.Items))
	for _, l := range leases.Items {
		claimed[l.Name] = true
	}
	var adopted []int32
	for mw, named := range kept {
		for p := range named {
			l := r.claimLease(mw, p)
			if claimed[l.Name] {
				continue
			}
			if err := r.c.Create(ctx, l); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("adopting doorman port %d of ManagedWorkload %s, named without a claim: %w", p, klogKey(mw), err)
			}
			claimed[l.Name] = true
			adopted = append(adopted, p)
		}
	}
	if len(adopted) > 0 {
		sort.Slice(adopted, func(i, j int) bool { return adopted[i] < adopted[j] })
		log.FromContext(ctx).Info("Claimed doorman ports that statuses named without a claim (written by a version before port claims)", "ports", adopted)
	}
	return nil
}

// dropClaims deletes the claims a ManagedWorkload being deleted still has
// on ports, the ones its status named, once their holds are over: nothing
// of it can name them again. A claim another workload took over stays (its
// UID differs), and a delete carries the Lease's resourceVersion, as a
// takeover's does.
func (r *Router) dropClaims(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, ports map[int32]bool) error {
	for p := range ports {
		var l coordinationv1.Lease
		err := r.reader.Get(ctx, client.ObjectKey{Namespace: r.doorman.Namespace, Name: claimPrefix + strconv.Itoa(int(p))}, &l)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading doorman port %d's claim: %w", p, err)
		}
		if l.Annotations[annotationClaimUID] != string(mw.UID) {
			continue
		}
		err = r.c.Delete(ctx, &l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("dropping doorman port %d's claim: %w", p, err)
		}
	}
	return nil
}
