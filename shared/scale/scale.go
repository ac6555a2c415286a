// Package scale reads and writes the scale subresource (autoscaling/v1
// Scale) of any workload: a typed one (Deployment, StatefulSet) through
// controller-runtime's typed client, and any other kind, read as
// unstructured, through the same subresource as unstructured and converted.
// The operator's pause and wake and the uninstall restore (package restore)
// both scale through it, so every kind with a scale subresource is scaled
// the same way (docs/pause.md#other-kinds-of-workload).
package scale

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GVK is autoscaling/v1 Scale, the body of every scale subresource.
var GVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// Get reads obj's scale subresource, live when c reads live.
func Get(ctx context.Context, c client.Client, obj client.Object) (*autoscalingv1.Scale, error) {
	if _, ok := obj.(runtime.Unstructured); !ok {
		s := &autoscalingv1.Scale{}
		if err := c.SubResource("scale").Get(ctx, obj, s); err != nil {
			return nil, err
		}
		return s, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK)
	if err := c.SubResource("scale").Get(ctx, obj, u); err != nil {
		return nil, err
	}
	s := &autoscalingv1.Scale{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		return nil, fmt.Errorf("reading the scale of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	return s, nil
}

// Update writes s (read by Get, with its resourceVersion) back through
// obj's scale subresource; opts such as client.DryRunAll apply to the write.
func Update(ctx context.Context, c client.Client, obj client.Object, s *autoscalingv1.Scale, opts ...client.SubResourceUpdateOption) error {
	if _, ok := obj.(runtime.Unstructured); !ok {
		return c.SubResource("scale").Update(ctx, obj, append(opts, client.WithSubResourceBody(s))...)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return fmt.Errorf("writing the scale of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(GVK)
	return c.SubResource("scale").Update(ctx, obj, append(opts, client.WithSubResourceBody(u))...)
}
