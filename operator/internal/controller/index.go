package controller

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// IndexTargetRef indexes ManagedWorkloads by "<kind>/<name>" of their target.
const IndexTargetRef = "spec.targetRef"

// TargetRefKey is the IndexTargetRef value for a target.
func TargetRefKey(kind napwakev1alpha1.TargetKind, name string) string {
	return string(kind) + "/" + name
}

// IndexManagedWorkloads adds the IndexTargetRef index, which both the
// ManagedWorkload and the opt-in reconcilers list by. The manager calls it
// once, before it sets those reconcilers up: an informer takes an index
// only once.
func IndexManagedWorkloads(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &napwakev1alpha1.ManagedWorkload{}, IndexTargetRef, func(o client.Object) []string {
		mw := o.(*napwakev1alpha1.ManagedWorkload)
		return []string{TargetRefKey(mw.Spec.TargetRef.Kind, mw.Spec.TargetRef.Name)}
	})
	if err != nil {
		return fmt.Errorf("indexing ManagedWorkloads by %s: %w", IndexTargetRef, err)
	}
	return nil
}
