package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/page"
	"napwake.dev/shared/testenv"
	"napwake.dev/shared/testnet"
)

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// cfg is the package's API server (envtest), for the run loop's test.
var cfg *rest.Config

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childEnv); ok {
		runChild(args)
	}
	os.Exit(testenv.Run(m, func(s *testenv.Suite) error {
		cfg = s.Config
		return nil
	}))
}

// kubeconfigFile writes a kubeconfig for the package's API server, for the
// doorman's client-config loading (KUBECONFIG).
func kubeconfigFile(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestTheDoormanRunsAndStopsInOrder runs the real binary's run loop
// against a real API server: Ready once it listens on every routed port
// (the first connection after /readyz turns 200 is answered), metrics served, and on stop not Ready at once, serving through
// the serve period, then closed.
func TestTheDoormanRunsAndStopsInOrder(t *testing.T) {
	t.Setenv("KUBECONFIG", kubeconfigFile(t))
	t.Setenv("POD_NAME", "napwake-doorman-0")
	t.Setenv("POD_IPS", "10.0.0.7")

	scheme := runtime.NewScheme()
	_ = napwakev1alpha1.AddToScheme(scheme)
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	port := 20000 + os.Getpid()%9000
	mw := &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default"},
		Spec: napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{Kind: napwakev1alpha1.KindDeployment, Name: "api"}}}
	if err := k8s.Create(ctx, mw); err != nil {
		t.Fatal(err)
	}
	mw.Status = napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhasePaused,
		Pause:   &napwakev1alpha1.PauseStatus{StartedAt: metav1.Now(), Replicas: 1, Reason: napwakev1alpha1.PauseIdle},
		Doorman: &napwakev1alpha1.DoormanStatus{Routes: []napwakev1alpha1.Route{{Service: "api", PortName: "http", Port: 80, DoormanPort: int32(port)}}}}
	if err := k8s.Status().Update(ctx, mw); err != nil {
		t.Fatal(err)
	}

	serveWhileStopping, finishWhileStopping = time.Second, 500*time.Millisecond
	health, metricsAddr := testnet.FreeAddr(t), testnet.FreeAddr(t)
	stop, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runUntil(stop, []string{"--listen-address", "127.0.0.1", "--health-probe-bind-address", health,
			"--metrics-bind-address", metricsAddr, "--log-format", "text", "--health-check-user-agents", "MyCorpMonitor/"})
	}()
	testenv.EventuallyTrue(t, "/readyz 200", func() bool { code, _ := get("http://" + health + "/readyz"); return code == 200 })
	if code, _ := get("http://" + health + "/healthz"); code != 200 {
		t.Fatalf("/healthz %d", code)
	}
	probe := func() (string, error) {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return "", err
		}
		defer c.Close()
		_, _ = c.Write([]byte("GET / HTTP/1.1\r\nUser-Agent: MyCorpMonitor/1\r\n\r\n"))
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		return string(b), err
	}
	// Ready means listening on every routed port: the first try answers.
	if got, err := probe(); err != nil || got != string(page.Probe(false)) {
		t.Fatalf("the route's port, right after /readyz turned 200: %q, %v; want the probe answer", got, err)
	}
	if code, body := get("http://" + metricsAddr + "/metrics"); code != 200 || !strings.Contains(body, `napwake_doorman_wakes_total{result="turned_away"} 0`) {
		t.Fatalf("/metrics %d:\n%.300s", code, body)
	}

	start := time.Now()
	cancel()
	testenv.EventuallyTrue(t, "/readyz failing at once", func() bool { code, _ := get("http://" + health + "/readyz"); return code == 503 })
	if got, err := probe(); err != nil || got != string(page.Probe(false)) || time.Since(start) >= serveWhileStopping {
		t.Fatalf("during the serve period: %q %v after %v", got, err, time.Since(start))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the doorman did not stop")
	}
	if d := time.Since(start); d < serveWhileStopping {
		t.Fatalf("stopped after %v, before the serve period", d)
	}
	if _, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		t.Fatal("the route's port still accepts after stopping")
	}
	_ = fmt.Sprint()
}

func TestVersionPrintsAndExits(t *testing.T) {
	if err := run([]string{"--version"}); err != nil {
		t.Fatal(err)
	}
}

func TestBadFlagsAreRefused(t *testing.T) {
	err := run([]string{"--listen-address", "not-an-ip"})
	if err == nil || !strings.Contains(err.Error(), "--listen-address") {
		t.Fatalf("got %v", err)
	}
}

func TestAnEmptyPodIPsIsRefusedAtStart(t *testing.T) {
	t.Setenv("POD_IPS", "")
	t.Setenv("POD_IP", "")
	err := run([]string{"--listen-address", "not-an-ip"})
	if err == nil || !strings.Contains(err.Error(), "POD_IPS is empty") || !strings.Contains(err.Error(), "--listen-address") {
		t.Fatalf("got %v, want both POD_IPS and --listen-address named", err)
	}
}
