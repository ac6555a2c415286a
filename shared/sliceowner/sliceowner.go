// Package sliceowner says whether an EndpointSlice is one Kubernetes' own
// EndpointSlice controller made for a Service. The doorman dials only the
// addresses of such slices, and the operator leads routed Services only to
// doorman pods such slices name, so a slice someone labelled by hand to look
// like the controller's (anyone who may create EndpointSlices in that
// namespace can) leads nowhere. It reads labels and owner references only:
// no client.
package sliceowner

import (
	discoveryv1 "k8s.io/api/discovery/v1"
)

// controllerManager is the managed-by label value of Kubernetes' own
// EndpointSlice controller (apis' EndpointSliceControllerManager; shared
// does not import apis).
const controllerManager = "endpointslice-controller.k8s.io"

// ByController reports whether s is the EndpointSlice controller's for the
// Service named service: its managed-by and service-name labels, and its
// controller owner reference to that core/v1 Service with a UID, as the
// controller sets it (a slice naming a UID no Service has is deleted by
// the garbage collector).
func ByController(s *discoveryv1.EndpointSlice, service string) bool {
	if s.Labels[discoveryv1.LabelManagedBy] != controllerManager || s.Labels[discoveryv1.LabelServiceName] != service {
		return false
	}
	for _, o := range s.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.APIVersion == "v1" && o.Kind == "Service" && o.Name == service && o.UID != ""
		}
	}
	return false
}
