package routing

import (
	"context"
	"errors"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/routing/epslice"
)

// Slice writes: create, update or delete the doorman's EndpointSlices,
// never touching one someone else owns.

// errNotOurs: a slice of the doorman's name that the operator didn't write
// for this workload; it is never overwritten.
var errNotOurs = errors.New("is not the operator's for this workload, and is never overwritten")

// writeSlices creates or updates the desired slices and deletes the
// workload's others. Slices are read past the cache: one just written may
// not be in it yet. A slice of the name that the operator wrote for
// another workload in the namespace (which the same Service selects, and
// is paused too) is left as it is and reported in shared, by Service.
func (r *Router) writeSlices(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, desired []discoveryv1.EndpointSlice) (shared map[string]string, err error) {
	var errs []error
	// share records a slice written for another workload; false if it isn't.
	share := func(s *discoveryv1.EndpointSlice) bool {
		owner, w := epslice.OwnerOf(s, mw.Name)
		if owner != epslice.Sharer {
			return false
		}
		if shared == nil {
			shared = map[string]string{}
		}
		shared[s.Labels[napwakev1alpha1.LabelServiceName]] = w
		return true
	}
	keepNames := map[string]bool{}
	for i := range desired {
		want := &desired[i]
		keepNames[want.Name] = true
		var have discoveryv1.EndpointSlice
		err := r.reader.Get(ctx, client.ObjectKeyFromObject(want), &have)
		switch {
		case apierrors.IsNotFound(err):
			err := r.c.Create(ctx, want)
			if apierrors.IsAlreadyExists(err) {
				// Another workload behind the Service, pausing at the same
				// moment, wrote it first.
				if gerr := r.reader.Get(ctx, client.ObjectKeyFromObject(want), &have); gerr == nil && share(&have) {
					continue
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("creating EndpointSlice %s/%s: %w", want.Namespace, want.Name, err))
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("getting EndpointSlice %s/%s: %w", want.Namespace, want.Name, err))
		case share(&have): // another workload's, behind the same Service: left as it is
		case !epslice.Ours(&have, mw.Name): // Foreign
			errs = append(errs, fmt.Errorf("EndpointSlice %s/%s (managed by %q, workload %q) %w", want.Namespace, want.Name,
				have.Labels[napwakev1alpha1.LabelEndpointSliceManagedBy], have.Labels[napwakev1alpha1.LabelWorkload], errNotOurs))
		case epslice.NeedsUpdate(&have, want):
			epslice.Apply(&have, want)
			if err := r.c.Update(ctx, &have); err != nil {
				errs = append(errs, fmt.Errorf("updating EndpointSlice %s/%s: %w", want.Namespace, want.Name, err))
			}
		}
	}
	if err := r.deleteSlices(ctx, mw, keepNames); err != nil {
		errs = append(errs, err)
	}
	return shared, errors.Join(errs...)
}

// deleteSlices deletes the workload's slices but those named in keep.
func (r *Router) deleteSlices(ctx context.Context, mw *napwakev1alpha1.ManagedWorkload, keep map[string]bool) error {
	var list discoveryv1.EndpointSliceList
	if err := r.reader.List(ctx, &list, client.InNamespace(mw.Namespace), client.MatchingLabels{
		napwakev1alpha1.LabelEndpointSliceManagedBy: napwakev1alpha1.EndpointSliceManager,
		napwakev1alpha1.LabelWorkload:               mw.Name,
	}); err != nil {
		return fmt.Errorf("listing ManagedWorkload %s's EndpointSlices: %w", klogKey(mw), err)
	}
	var errs []error
	for i := range list.Items {
		s := &list.Items[i]
		if keep[s.Name] {
			continue
		}
		if err := r.c.Delete(ctx, s, client.Preconditions{UID: &s.UID}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting EndpointSlice %s/%s: %w", s.Namespace, s.Name, err))
		}
	}
	return errors.Join(errs...)
}
