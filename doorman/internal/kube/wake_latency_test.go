package kube

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/doorman/internal/tools/firstbyte"
)

// TestWakeToFirstByteThroughTheWatch measures, through a real API server
// and the doorman's informers, the time from the Service's own
// EndpointSlice showing a Ready Pod (the create call returning) to each
// held caller's first byte at the pod. NAPWAKE_WAKE_HELD lists the numbers
// of held callers (default 50); hack/bench/doorman.sh sets 1,50,256. The
// bound asserted is loose (the machine may be busy); the numbers are logged.
func TestWakeToFirstByteThroughTheWatch(t *testing.T) {
	sizes := []int{50}
	if v := os.Getenv("NAPWAKE_WAKE_HELD"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("NAPWAKE_WAKE_HELD %q: %v", v, err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			rec := wakeThroughWatch(t, n)
			t0 := rec.t0
			a50, a99, _ := rec.KernelPercentiles(t0)
			p50, p99, mx := rec.Percentiles(t0)
			t.Logf("wake to first byte through the watch, %d held: arrival p50 %.2f ms, p99 %.2f ms; read p50 %.2f ms, p99 %.2f ms, max %.2f ms", n, ms(a50), ms(a99), ms(p50), ms(p99), ms(mx))
			fmt.Printf("| %d | %.2f | %.2f | %.2f | %.2f |\n", n, ms(a50), ms(a99), ms(p50), ms(p99))
			if p99 > 2*time.Second {
				t.Fatalf("p99 %v: held callers are not moved by the watch", p99)
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// timedRecorder is a Recorder and the moment the Ready pod's slice was made.
type timedRecorder struct {
	*firstbyte.Recorder
	t0 time.Time
}

func wakeThroughWatch(t *testing.T, n int) timedRecorder {
	namespace := newNamespace(t)
	port := freePort(t)
	createMW(t, namespace, port, v1alpha1.PhaseResuming, time.Now().Add(-time.Hour))
	limits := proxy.DefaultLimits()
	limits.HeldPerWorkload, limits.HeldPerSource, limits.HeldPerSourceWorkload = limits.Held, limits.Held, limits.Held
	st := startDoormanWith(t, clock.RealClock{}, limits)

	rec := firstbyte.New(n)
	pod, err := rec.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pod.Close()
	first := dialPort(t, port)
	conns := []net.Conn{first}
	for len(conns) < n {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for _, c := range conns {
		_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: api\r\n\r\n"))
	}
	key := proxy.ServiceKey{Namespace: namespace, Service: "api", PortName: "http"}
	eventually(t, "every caller held at its wait", func() bool { return st.table.Waiting(key) == n })

	p := createPod(t, namespace, "api-1", "10.244.0.5")
	eventually(t, "the Pod in the doorman's cache before its slice", func() bool {
		return st.cache.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{}) == nil
	})
	t0 := time.Now()
	createSlice(t, namespace, p, "10.244.0.5", pod.Addr().(*net.TCPAddr).Port, v1alpha1.EndpointSliceControllerManager)
	if err := rec.Wait(n, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	return timedRecorder{rec, t0}
}

func heldGauge(st *stack) float64 {
	mf, err := st.m.Registry.Gather()
	if err != nil {
		return 0
	}
	for _, f := range mf {
		if f.GetName() == "napwake_doorman_held_connections" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}
