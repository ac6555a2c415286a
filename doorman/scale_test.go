package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/signals"
	"napwake.dev/shared/testenv"
	"napwake.dev/shared/testnet"
)

// childEnv, when set, makes this test binary the doorman itself (TestMain
// runs it instead of the tests), so the scale benchmark measures a doorman
// process of its own: its RSS is the doorman's alone, not the test's.
const childEnv = "NAPWAKE_DOORMAN_CHILD_ARGS"

// runChild runs the doorman with the arguments childEnv carries and exits.
func runChild(args string) {
	if err := runUntil(signals.Context(context.Background()), strings.Fields(args)); err != nil {
		fmt.Fprintln(os.Stderr, "doorman:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// freshRoutes is how many routes the scale benchmark writes one at a time
// once the doorman listens on the others, timing each from its status
// write to its port accepting.
const freshRoutes = 20

// BenchmarkRoutedPorts runs the doorman, as a process of its own, against
// a real API server with 10 routed ports and with the whole range (10,000,
// of which 20 are written after it is Ready): the time until it is Ready
// (listening on every routed port), its resident memory, its goroutines,
// and the time from one more route's status write to its port accepting.
// The 10-port run is the peer the 10,000-port run is read against
// (hack/bench/scale.sh prints the ratios; docs/bench/scale.md has a run).
func BenchmarkRoutedPorts(b *testing.B) {
	for _, n := range []int{10, napwakev1alpha1.DoormanPortMax - napwakev1alpha1.DoormanPortMin + 1} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				routedPorts(b, n)
			}
		})
	}
}

func routedPorts(b *testing.B, n int) {
	b.Helper()
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = napwakev1alpha1.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	ns := fmt.Sprintf("scale-%d-%d", n, time.Now().UnixNano())
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	// The small run routes its n before the doorman starts and writes
	// freshRoutes more; the full run routes all but the last freshRoutes
	// of the range first.
	base, first := napwakev1alpha1.DoormanPortMin, n
	if n > 10*freshRoutes {
		first = n - freshRoutes
	}
	writeRoutes(b, k8s, ns, base, 0, first)

	health := testnet.FreeAddr(b)
	metricsAddr := testnet.FreeAddr(b)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=--listen-address 127.0.0.1 --health-probe-bind-address "+health+
		" --metrics-bind-address "+metricsAddr+" --log-format text --log-level error",
		"KUBECONFIG="+kubeconfigFile(b), "POD_NAME=napwake-doorman-scale", "POD_IPS=10.0.0.7")
	cmd.Stderr = os.Stderr
	started := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() }()
	testenv.EventuallyTrue(b, "the doorman Ready on every routed port", func() bool { code, _ := get("http://" + health + "/readyz"); return code == 200 })
	ready := time.Since(started)

	var took []time.Duration
	for i := range freshRoutes {
		port := base + first + i
		t0 := time.Now()
		writeRoutes(b, k8s, ns, base, first+i, first+i+1)
		testenv.EventuallyTrue(b, "port "+strconv.Itoa(port)+" accepting", func() bool {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 100*time.Millisecond)
			if err == nil {
				_ = c.Close()
			}
			return err == nil
		})
		took = append(took, time.Since(t0))
	}
	slices.Sort(took)
	rss, hwm := procMemory(b, cmd.Process.Pid)
	_, body := get("http://" + metricsAddr + "/metrics")
	b.ReportMetric(float64(n), "routed-ports")
	b.ReportMetric(ready.Seconds(), "s-to-ready")
	b.ReportMetric(rss/(1<<20), "MiB-rss")
	b.ReportMetric(hwm/(1<<20), "MiB-peak-rss")
	b.ReportMetric(metricValue(body, "go_goroutines"), "goroutines")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-write-to-listen-p50")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "ms-write-to-listen-p90")
	_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

// writeRoutes creates ManagedWorkloads w<from>..w<to-1>, each Paused with
// one route on port base+i, sixteen writers at a time.
func writeRoutes(b *testing.B, k8s client.Client, ns string, base, from, to int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, to-from)
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				errs <- pausedWithRoute(k8s, ns, "w"+strconv.Itoa(i), int32(base+i))
			}
		})
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

func pausedWithRoute(k8s client.Client, ns, name string, port int32) error {
	ctx := context.Background()
	mw := &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: name}}}
	if err := k8s.Create(ctx, mw); err != nil {
		return err
	}
	mw.Status = napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhasePaused,
		Pause:   &napwakev1alpha1.PauseStatus{StartedAt: metav1.Now(), Replicas: 1, Reason: napwakev1alpha1.PauseIdle},
		Doorman: &napwakev1alpha1.DoormanStatus{Routes: []napwakev1alpha1.Route{{Service: name, PortName: "http", Port: 80, DoormanPort: port}}}}
	return k8s.Status().Update(ctx, mw)
}

// procMemory returns a process's resident set and its peak, in bytes.
func procMemory(b *testing.B, pid int) (rss, peak float64) {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kib, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kib * 1024
		case "VmHWM:":
			peak = kib * 1024
		}
	}
	return rss, peak
}

// metricValue is an unlabelled metric's value in a Prometheus text page.
func metricValue(page, name string) float64 {
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}
