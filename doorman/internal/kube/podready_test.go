package kube

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/doorman/internal/tools/firstbyte"
	"napwake.dev/shared/testenv"
)

// apiSelector is what the test Service "api" selects.
var apiSelector = map[string]string{"app": "api"}

// createService creates the Service "api" in namespace selecting
// apiSelector, its port "http" 80 sending to the container port "web".
func createService(t *testing.T, namespace string) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: namespace},
		Spec: corev1.ServiceSpec{Selector: apiSelector, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("web")}}}}
	if err := k8s.Create(context.Background(), svc); err != nil {
		t.Fatalf("creating the Service: %v", err)
	}
}

// setReady sets p's PodReady condition by a status update, as the kubelet
// does.
func setReady(t *testing.T, p *corev1.Pod, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	if err := k8s.Status().Update(context.Background(), p); err != nil {
		t.Fatalf("setting %s Ready=%v: %v", p.Name, ready, err)
	}
}

// standInPod listens on loopback, as a pod does behind dialLoopback, and
// sends on got the first request each connection brings.
func standInPod(t *testing.T, got chan<- string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go firstbyte.AcceptEach(ln, func(c net.Conn) {
		defer c.Close()
		b := make([]byte, 64)
		n, _ := c.Read(b)
		got <- string(b[:n])
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"))
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// TestAHeldCallerIsPassedToAPodReadyByItsStatusWithNoEndpointSlice: through
// a real API server, with no EndpointSlice at all for the Service, a held
// caller reaches the Service's pod once a status update marks it Ready;
// until then, neither a Ready pod the Service does not select, nor a
// selected pod Ready=False, nor a selected Ready pod in another namespace
// receives it.
func TestAHeldCallerIsPassedToAPodReadyByItsStatusWithNoEndpointSlice(t *testing.T) {
	namespace, other := newNamespace(t), newNamespace(t)
	port := freeDoormanPort(t)
	createMW(t, namespace, port, napwakev1alpha1.PhasePaused, time.Now().Add(-time.Hour))
	createService(t, namespace)
	st := startDoorman(t, clock.RealClock{})

	good, wrong := make(chan string, 4), make(chan string, 4)
	api := createLabelledPod(t, namespace, "api-1", "10.244.0.5", apiSelector, standInPod(t, good))
	notSelected := createLabelledPod(t, namespace, "web-1", "10.244.0.6", map[string]string{"app": "web"}, standInPod(t, wrong))
	setReady(t, notSelected, true)
	notReady := createLabelledPod(t, namespace, "api-2", "10.244.0.7", apiSelector, standInPod(t, wrong))
	setReady(t, notReady, false)
	elsewhere := createLabelledPod(t, other, "api-1", "10.244.0.8", apiSelector, standInPod(t, wrong))
	setReady(t, elsewhere, true)
	testenv.EventuallyTrue(t, "the pods in the doorman's cache", func() bool {
		for _, p := range []*corev1.Pod{api, notSelected, notReady, elsewhere} {
			var held corev1.Pod
			if st.cache.Get(context.Background(), client.ObjectKeyFromObject(p), &held) != nil || held.ResourceVersion != p.ResourceVersion {
				return false
			}
		}
		return st.cache.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "api"}, &corev1.Service{}) == nil
	})

	c := dialPort(t, port)
	req := "GET /api HTTP/1.1\r\nHost: api\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	key := proxy.ServiceKey{Namespace: namespace, Service: "api", PortName: "http"}
	testenv.EventuallyTrue(t, "the caller held", func() bool { return st.table.Waiting(key) == 1 })
	time.Sleep(300 * time.Millisecond) // give a wrong pass the chance to happen
	select {
	case s := <-wrong:
		t.Fatalf("a pod the Service may not reach got %q", s)
	case s := <-good:
		t.Fatalf("the pod got %q before it was Ready", s)
	default:
	}
	if eps := st.table.Endpoints(key); len(eps) != 0 {
		t.Fatalf("endpoints %v before the Service's pod is Ready", eps)
	}

	setReady(t, api, true)
	select {
	case s := <-good:
		if s != req {
			t.Fatalf("pod got %q, want %q", s, req)
		}
	case s := <-wrong:
		t.Fatalf("a pod the Service may not reach got %q", s)
	case <-time.After(10 * time.Second):
		t.Fatal("the held request never reached the pod Ready by its status")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(c); string(b) != "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi" {
		t.Fatalf("caller got %q", b)
	}
	var slices discoveryv1.EndpointSliceList
	if err := k8s.List(context.Background(), &slices, client.InNamespace(namespace)); err != nil || len(slices.Items) != 0 {
		t.Fatalf("EndpointSlices %v (%v): the test means there to be none", slices.Items, err)
	}
	// Not Ready again: the pod leaves the table.
	setReady(t, api, false)
	testenv.EventuallyTrue(t, "no endpoint once the pod is not Ready", func() bool { return len(st.table.Endpoints(key)) == 0 })
}
