package main

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
	"napwake.dev/shared/testnet"
)

// lockedBuffer is a child's stderr, read while it is written.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestASIGTERMTakesTheSpecsTimes runs the doorman as a process of its own
// with its real shutdown periods, holds a request to a paused workload,
// sends SIGTERM and reads the times off it (docs/troubleshooting.md, "When
// a doorman pod stops"): not Ready at once, new connections accepted for
// 15 s, the held connection kept until 25 s after that (40 s), and the
// process gone within stopsWithin, which the chart's grace period covers
// with its margin (e2e/chart).
func TestASIGTERMTakesTheSpecsTimes(t *testing.T) {
	t.Parallel() // about 45 s, nearly all of it waiting
	if stopsWithin != 43*time.Second {
		t.Fatalf("stopsWithin %v: the chart's grace period (5 s preStop + 43 s + a 5 s margin at least) is written for 43 s", stopsWithin)
	}
	scheme := runtime.NewScheme()
	_ = napwakev1alpha1.AddToScheme(scheme)
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	port := freeDoormanPort(t)
	if err := pausedWithRoute(k8s, "default", "sigterm", int32(port)); err != nil {
		t.Fatal(err)
	}

	health, metricsAddr := testnet.FreeAddr(t), testnet.FreeAddr(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=--listen-address 127.0.0.1 --health-probe-bind-address "+health+
		" --metrics-bind-address "+metricsAddr+" --log-format text",
		"KUBECONFIG="+kubeconfigFile(t), "POD_NAME=napwake-doorman-sigterm", "POD_IPS=10.0.0.7")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan time.Time, 1)
	go func() { _ = cmd.Wait(); exited <- time.Now() }()
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
	testenv.EventuallyTrue(t, "/readyz 200", func() bool { code, _ := get("http://" + health + "/readyz"); return code == 200 })

	// A request to the paused workload: held (maxWait is 2 minutes), so
	// only the shutdown ends it.
	held, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := held.Write([]byte("GET / HTTP/1.1\r\nHost: api\r\nUser-Agent: curl/8.5.0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyTrue(t, "the request held", func() bool {
		_, body := get("http://" + metricsAddr + "/metrics")
		return metricValue(body, "napwake_doorman_held_connections") == 1
	})
	heldClosed := make(chan time.Time, 1)
	go func() {
		_ = held.SetReadDeadline(time.Now().Add(2 * time.Minute))
		got, _ := io.ReadAll(held)
		if len(got) > 0 {
			t.Errorf("the held request was answered %q; want it closed with nothing sent", got)
		}
		heldClosed <- time.Now()
	}()

	sigterm := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	since := func(at time.Time) time.Duration { return at.Sub(sigterm).Round(10 * time.Millisecond) }
	testenv.EventuallyTrue(t, "/readyz 503", func() bool { code, _ := get("http://" + health + "/readyz"); return code == 503 })
	if d := time.Since(sigterm); d > time.Second {
		t.Errorf("/readyz failed %v after SIGTERM; want at once", d)
	}

	// The port accepts until 15 s after SIGTERM, then refuses.
	var refused time.Time
	for deadline := sigterm.Add(20 * time.Second); refused.IsZero() && time.Now().Before(deadline); {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			refused = time.Now()
			break
		}
		_ = c.Close()
		time.Sleep(50 * time.Millisecond) // polling the port, bounded by the deadline
	}
	if d := since(refused); refused.IsZero() || d < 15*time.Second || d > 16*time.Second {
		t.Errorf("the port refused new connections %v after SIGTERM; want 15 s (zero: never)", d)
	}

	var closedAt, exitedAt time.Time
	select {
	case closedAt = <-heldClosed:
	case <-time.After(time.Minute):
		t.Fatal("the held connection was not closed within a minute of SIGTERM")
	}
	if d := since(closedAt); d < 40*time.Second || d > 41*time.Second {
		t.Errorf("the held connection was closed %v after SIGTERM; want 40 s (15 s of service, then 25 s to finish)", d)
	}
	select {
	case exitedAt = <-exited:
	case <-time.After(stopsWithin + 5*time.Second - time.Since(sigterm)):
		t.Fatalf("the doorman had not exited %v after SIGTERM; want within %v", time.Since(sigterm), stopsWithin)
	}
	if d := since(exitedAt); d > stopsWithin {
		t.Errorf("the doorman exited %v after SIGTERM; want within %v", d, stopsWithin)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if log := stderr.String(); !strings.Contains(log, `servingFor=15s thenFinishingWithin=25s`) {
		t.Errorf("the doorman did not log its periods:\n%s", log)
	}
	t.Logf("SIGTERM: refused new connections after %v, closed the held one after %v, exited after %v",
		since(refused), since(closedAt), since(exitedAt))
}

// freeDoormanPort returns a port in the doorman range (20000-29999) that
// nothing listens on now.
func freeDoormanPort(t *testing.T) int {
	t.Helper()
	for range 100 {
		port := napwakev1alpha1.DoormanPortMin + rand.IntN(napwakev1alpha1.DoormanPortMax-napwakev1alpha1.DoormanPortMin+1)
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			_ = ln.Close()
			return port
		}
	}
	t.Fatal("no free port in the doorman range")
	return 0
}
