package routing

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/config"
	"napwake.dev/operator/internal/controller"
	"napwake.dev/operator/internal/manager"
)

// The Router is the pause/wake core's controller.Router.
var _ controller.Router = (*Router)(nil)

// TestSlicesAreInPlaceBeforeTheScaleToZero runs the whole operator (the
// pause/wake reconciler with this Router) and proves the order a pause
// promises: the doorman's slice exists before the Deployment is scaled to
// 0. Resource versions are etcd revisions, ordered across kinds.
func TestSlicesAreInPlaceBeforeTheScaleToZero(t *testing.T) {
	f := newFixture(t)
	f.setDoormen(doormanPod{"doorman-a", "10.1.0.1", true})
	f.pods.serve(f.ctx, "10.1.0.1")
	f.service("api")
	tmpl := template(true)
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: f.ns},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: apiLabels}, Template: *tmpl},
	}
	f.create(deploy)

	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	f.g.Expect(err).NotTo(HaveOccurred())
	var slices discoveryv1.EndpointSliceList
	f.g.Expect(wc.List(f.ctx, &slices, client.InNamespace(f.ns))).To(Succeed())
	sw, err := wc.Watch(f.ctx, &discoveryv1.EndpointSliceList{}, client.InNamespace(f.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: slices.ResourceVersion}})
	f.g.Expect(err).NotTo(HaveOccurred())
	defer sw.Stop()
	var deploys appsv1.DeploymentList
	f.g.Expect(wc.List(f.ctx, &deploys, client.InNamespace(f.ns))).To(Succeed())
	dw, err := wc.Watch(f.ctx, &appsv1.DeploymentList{}, client.InNamespace(f.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: deploys.ResourceVersion}})
	f.g.Expect(err).NotTo(HaveOccurred())
	defer dw.Stop()

	c := config.Default(os.Getenv)
	c.MetricsBindAddress, c.HealthProbeBindAddress, c.LeaderElect = "0", "0", false
	c.DoormanService = doormanNS + "/" + f.doorman
	mgr, err := manager.New(manager.Options{
		Config: c, REST: cfg, Log: logr.Discard(), SkipNameValidation: true,
		NewRouter: func(deps manager.RouterDeps) (controller.Router, error) {
			return New(deps.Manager.GetClient(), deps.Manager.GetAPIReader(), Options{DoormanService: c.DoormanService, Dial: f.pods.dial},
				deps.Clock, deps.Manager.GetEventRecorder("napwake-routing"))
		},
	})
	f.g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	defer func() { cancel(); <-done }()

	mw := &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: f.ns},
		Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"}},
	}
	f.create(mw)
	f.g.Eventually(func() napwakev1alpha1.Phase { return f.get(mw).Status.Phase }).Should(Equal(napwakev1alpha1.PhaseRunning))
	// A pause request stamped after the creation second, as the core wants.
	got := f.get(mw)
	base := got.DeepCopy()
	got.Annotations = map[string]string{napwakev1alpha1.AnnotationPauseRequested: got.CreationTimestamp.Add(time.Second).UTC().Format(time.RFC3339)}
	f.g.Expect(k8s.Patch(f.ctx, got, client.MergeFrom(base))).To(Succeed())

	var sliceRV, scaleRV int64
	deadline := time.After(30 * time.Second)
	for sliceRV == 0 || scaleRV == 0 {
		select {
		case ev := <-sw.ResultChan():
			if s, ok := ev.Object.(*discoveryv1.EndpointSlice); ok && s.Name == "api-napwake-ipv4" && sliceRV == 0 {
				sliceRV, _ = strconv.ParseInt(s.ResourceVersion, 10, 64)
			}
		case ev := <-dw.ResultChan():
			if d, ok := ev.Object.(*appsv1.Deployment); ok && d.Spec.Replicas != nil && *d.Spec.Replicas == 0 && scaleRV == 0 {
				scaleRV, _ = strconv.ParseInt(d.ResourceVersion, 10, 64)
			}
		case <-deadline:
			t.Fatalf("after 30 s (status %+v): slice written at revision %d, scale to 0 at %d (0: not seen)", f.get(mw).Status, sliceRV, scaleRV)
		}
	}
	f.g.Expect(sliceRV).To(BeNumerically("<", scaleRV), "the slice is in place before the scale to 0")
	f.g.Eventually(func() string {
		return wakeOnRequest(f.get(&napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: f.ns}})).Reason
	}).
		Should(Equal(napwakev1alpha1.ReasonDoormanRouted))
}
