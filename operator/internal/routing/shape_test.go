package routing

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestSlicesKeepTheIngressShapeThroughTheAPIServer: the doorman's slices,
// as the API server stores them, keep the shape ingress controllers need
// (docs/design/pause-wake.md#the-doormans-endpointslices): explicit
// ready/serving/terminating, every port
// named (an unnamed Service port as name "", not dropped to nil) with
// protocol TCP, and no targetRef, though the doorman pods' slices carry one.
func TestSlicesKeepTheIngressShapeThroughTheAPIServer(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true}, doormanPod{"doorman-b", "10.1.0.2", true})
	f.pods.serve(f.ctx, "10.1.0.1", "10.1.0.2")
	f.service("api", withPorts(corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP}))
	mw := f.pausing("api")
	_, err := f.router().Route(f.ctx, mw, template(true))
	f.g.Expect(err).NotTo(HaveOccurred())

	s, err := f.slice("api-napwake-ipv4")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(s.Endpoints).To(HaveLen(2))
	for _, e := range s.Endpoints {
		f.g.Expect(e.Conditions.Ready).To(Equal(ptr.To(true)), "ready explicit: %+v", e)
		f.g.Expect(e.Conditions.Serving).To(Equal(ptr.To(true)), "serving explicit: %+v", e)
		f.g.Expect(e.Conditions.Terminating).To(Equal(ptr.To(false)), "terminating explicit: %+v", e)
		f.g.Expect(e.TargetRef).To(BeNil(), "no targetRef: %+v", e)
	}
	f.g.Expect(s.Ports).To(HaveLen(1))
	f.g.Expect(s.Ports[0].Name).To(Equal(ptr.To("")), `an unnamed Service port is stored as name ""`)
	f.g.Expect(s.Ports[0].Protocol).To(Equal(ptr.To(corev1.ProtocolTCP)))
}
