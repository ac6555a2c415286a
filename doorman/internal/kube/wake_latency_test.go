package kube

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/doorman/internal/fdtable"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/doorman/internal/tools/firstbyte"
	"napwake.dev/shared/testenv"
)

// TestWakeToFirstByteThroughTheWatch measures, through a real API server
// and the doorman's informers, the time from the create call of the
// Service's own EndpointSlice listing a Ready Pod (the call itself counts)
// to each held caller's first byte at the pod. It also reports the create
// call's own duration (the API server's write, etcd's fsync included):
// the slice is in the API only once it returns, so that much of each
// figure is the API server's. The held callers and the stand-in pod run
// in a process of their own (this test binary again, see callersMain):
// callers and pods never share the doorman's process or its Go
// scheduler. NAPWAKE_WAKE_HELD lists the numbers of held callers (default
// 50), NAPWAKE_WAKE_ROUNDS the rounds of each (default 1);
// hack/bench/doorman.sh sets 1,50,256 and 5 and prints medians of the
// rounds with their range. The bound asserted is loose (the machine may
// be busy); the numbers are logged.
func TestWakeToFirstByteThroughTheWatch(t *testing.T) {
	sizes := envInts(t, "NAPWAKE_WAKE_HELD", "50")
	rounds := envInts(t, "NAPWAKE_WAKE_ROUNDS", "1")[0]
	callers := startCallers(t)
	for _, n := range sizes {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			// arrival p50, p99, read p50, p99 and the create call, in ms,
			// one per round
			var got [5][]float64
			for i, v := range wakeThroughWatch(t, callers, n, rounds) {
				got[i%5] = append(got[i%5], v)
			}
			t.Logf("wake to first byte through the watch, %d held, %d rounds: arrival p50 %v ms, p99 %v ms; read p50 %v ms, p99 %v ms; create call %v ms",
				n, rounds, got[0], got[1], got[2], got[3], got[4])
			fmt.Printf("| %d | %s | %s | %s | %s | %s |\n", n, spread(got[4]), spread(got[0]), spread(got[1]), spread(got[2]), spread(got[3]))
			if slices.Max(got[3]) > 2000 {
				t.Fatalf("read p99 %v ms: held callers are not moved by the watch", got[3])
			}
		})
	}
}

// wakeThroughWatch runs rounds wakes of n held callers on one doorman and
// returns each round's arrival p50, p99, read p50 and p99 (from the create
// call made) and the create call's duration, in ms, in turn.
func wakeThroughWatch(t *testing.T, callers *callersProc, n, rounds int) []float64 {
	t.Helper()
	namespace := newNamespace(t)
	port := freeDoormanPort(t)
	createMW(t, namespace, port, napwakev1alpha1.PhaseResuming, time.Now().Add(-time.Hour))
	limits := proxy.DefaultLimits()
	limits.HeldPerWorkload, limits.HeldPerSource, limits.HeldPerSourceWorkload = limits.Held, limits.Held, limits.Held
	st := startDoormanWith(t, clock.RealClock{}, limits)
	key := proxy.ServiceKey{Namespace: namespace, Service: "api", PortName: "http"}
	p := createPod(t, namespace, "api-1", "10.244.0.5")
	testenv.EventuallyTrue(t, "the Pod in the doorman's cache before its slice", func() bool {
		return st.cache.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{}) == nil
	})
	var out []float64
	for round := range rounds {
		podPort := callers.hold(t, port, n)
		testenv.EventuallyTrue(t, "every caller held at its wait", func() bool { return st.table.Waiting(key) == n })
		name := "api-1-slice-" + strconv.Itoa(round)
		t0 := time.Now()
		createSliceNamed(t, namespace, name, p, "10.244.0.5", podPort, napwakev1alpha1.EndpointSliceControllerManager)
		t1 := time.Now()
		out = append(out, callers.wait(t, t0, n)...)
		out = append(out, float64(t1.Sub(t0))/float64(time.Millisecond))
		callers.hangUp(t)
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
		if err := k8s.Delete(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyTrue(t, "no Ready endpoint left", func() bool { return len(st.table.Endpoints(key)) == 0 })
	}
	return out
}

func envInts(t *testing.T, name, def string) []int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			t.Fatalf("%s %q: want positive numbers, comma-separated", name, v)
		}
		out = append(out, n)
	}
	return out
}

// spread formats the median of v and, with more than one value, its range.
func spread(v []float64) string {
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if len(s) == 1 {
		return fmt.Sprintf("%.2f", med)
	}
	return fmt.Sprintf("%.2f [%.2f–%.2f]", med, s[0], s[len(s)-1])
}

// callersEnv makes this test binary the callers' process (callersMain).
const callersEnv = "NAPWAKE_WAKE_CALLERS"

// callersProc is the process that holds the callers and serves the
// stand-in pod, driven a line at a time.
type callersProc struct {
	in  io.WriteCloser
	out *bufio.Reader
}

func startCallers(t *testing.T) *callersProc {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), callersEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the callers' process: %v", err)
	}
	t.Cleanup(func() {
		_ = in.Close() // the process ends at the end of its input
		_ = cmd.Wait()
	})
	return &callersProc{in: in, out: bufio.NewReader(out)}
}

// ask sends one command and returns the reply's fields after want.
func (c *callersProc) ask(t *testing.T, cmd, want string) []string {
	t.Helper()
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		t.Fatalf("callers' process: %v", err)
	}
	l, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("callers' process, after %q: %v", cmd, err)
	}
	f := strings.Fields(l)
	if len(f) == 0 || f[0] != want {
		t.Fatalf("callers' process, after %q: %q", cmd, l)
	}
	return f[1:]
}

// hold starts a fresh stand-in pod and n callers on the doorman's port,
// each having sent a request; it returns the pod's port.
func (c *callersProc) hold(t *testing.T, doormanPort, n int) int {
	t.Helper()
	f := c.ask(t, fmt.Sprintf("hold %d %d", doormanPort, n), "POD")
	port, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// wait waits for the n first bytes at the pod and returns arrival p50,
// p99, read p50 and p99 since t0, in ms.
func (c *callersProc) wait(t *testing.T, t0 time.Time, n int) []float64 {
	t.Helper()
	f := c.ask(t, fmt.Sprintf("wait %d %d", t0.UnixNano(), n), "P")
	out := make([]float64, len(f))
	for i, v := range f {
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = float64(ns) / float64(time.Millisecond)
	}
	return out
}

func (c *callersProc) hangUp(t *testing.T) { t.Helper(); c.ask(t, "hangup", "OK") }

// callersMain is the callers' process: "hold PORT N" starts a stand-in pod
// and N callers to 127.0.0.1:PORT, each sending a request, and answers
// "POD <pod port>"; "pod N" starts a stand-in pod for N callers alone and
// answers the same; "bare N" arms a bare dialler of N callers and answers
// "ARMED", and "go PORT" (no answer) makes each connect to 127.0.0.1:PORT
// and send its request; "wait T0 N" answers "P" and the first bytes'
// arrival p50, p99, read p50 and p99 in ns since T0 (Unix ns), or "ERR";
// "hangup" closes the callers, the bare dialler's and the pod and answers
// "OK".
func callersMain() int {
	// As the doorman does at start (package fdtable).
	if _, err := fdtable.Reserve(8192); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	req := []byte("GET / HTTP/1.1\r\nHost: api\r\n\r\n")
	var rec *firstbyte.Recorder
	var pod net.Listener
	var conns []net.Conn
	bare := &bareDialer{req: req}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		var err error
		switch f[0] {
		case "hold":
			port, n := atoi(f[1]), atoi(f[2])
			rec = firstbyte.New(n)
			if pod, err = rec.Listen("127.0.0.1:0"); err != nil {
				break
			}
			target := "127.0.0.1:" + strconv.Itoa(port)
			for len(conns) < n && err == nil {
				var c net.Conn
				if c, err = dialListening(target); err == nil {
					conns = append(conns, c)
					_, err = c.Write(req)
				}
			}
			if err == nil {
				fmt.Println("POD", pod.Addr().(*net.TCPAddr).Port)
			}
		case "pod":
			rec = firstbyte.New(atoi(f[1]))
			if pod, err = rec.Listen("127.0.0.1:0"); err == nil {
				fmt.Println("POD", pod.Addr().(*net.TCPAddr).Port)
			}
		case "bare":
			bare.arm(atoi(f[1]))
			fmt.Println("ARMED")
		case "go":
			bare.release(atoi(f[1]))
		case "wait":
			t0, n := time.Unix(0, int64(atoi(f[1]))), atoi(f[2])
			if err = rec.Wait(n, 20*time.Second); err == nil {
				a50, a99, _ := rec.KernelPercentiles(t0)
				r50, r99, _ := rec.Percentiles(t0)
				fmt.Println("P", int64(a50), int64(a99), int64(r50), int64(r99))
			}
		case "hangup":
			conns = append(conns, bare.hangUp()...)
			for _, c := range conns {
				_ = c.Close()
			}
			conns = nil
			if pod != nil {
				_ = pod.Close()
			}
			fmt.Println("OK")
		default:
			err = fmt.Errorf("unknown command %q", f[0])
		}
		if err != nil {
			fmt.Println("ERR", err)
		}
	}
	return 0
}

// bareDialer is the peer of a doorman passing held callers on: n
// goroutines waiting, each of which connects and writes its request once
// released, the least any proxy must do.
type bareDialer struct {
	req   []byte
	port  int
	start chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func (b *bareDialer) arm(n int) {
	start := make(chan struct{})
	b.start, b.port = start, 0
	for range n {
		b.wg.Go(func() {
			<-start
			if b.port == 0 {
				return
			}
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(b.port))
			if err != nil {
				fmt.Fprintln(os.Stderr, "bare dialler:", err)
				return
			}
			_, _ = c.Write(b.req)
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
		})
	}
}

// release sends the armed callers to port, all at once.
func (b *bareDialer) release(port int) {
	b.port = port
	close(b.start)
	b.start = nil
}

// hangUp lets go of callers never released and returns the connections
// made, for the caller to close.
func (b *bareDialer) hangUp() []net.Conn {
	if b.start != nil {
		close(b.start) // port 0: they return
		b.start = nil
	}
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.conns
	b.conns = nil
	return out
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// dialListening dials target, waiting up to 10 s for the doorman to
// listen on it (its route comes through the watch).
func dialListening(target string) (net.Conn, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", target)
		if err == nil || time.Now().After(deadline) {
			return c, err
		}
		time.Sleep(20 * time.Millisecond) // bounded: until the doorman listens
	}
}

// TestWakeOnPodReadyThroughTheWatch measures the wake of 256 held callers
// through a real API server, with no EndpointSlice at all: n callers held
// on the doorman, a status update marks the Service's pod Ready, and the
// doorman passes them on from its Pod watch event; from the update call
// made (the call itself counts) to each caller's first byte at the pod.
// Its peer in the same run, rounds taking turns, is a bare dialler in a
// process of its own: n goroutines waiting, released by the same watch
// event (a handler on the doorman's own Pod informer), each connecting to
// the pod and writing the same request, the least any proxy passing on
// held callers from that event must do. The held callers and the stand-in
// pod run in a third process. NAPWAKE_PODREADY_HELD lists the numbers of
// held callers (default 50), NAPWAKE_PODREADY_ROUNDS the rounds (default
// 1); make bench-podready sets 256 and 5. It prints a table row per path
// and the ratio doorman / bare dialler of the median p99s (the target is
// at most 1.2); the bound asserted is loose (the machine may be busy).
func TestWakeOnPodReadyThroughTheWatch(t *testing.T) {
	sizes := envInts(t, "NAPWAKE_PODREADY_HELD", "50")
	rounds := envInts(t, "NAPWAKE_PODREADY_ROUNDS", "1")[0]
	callers, bare := startCallers(t), startCallers(t)
	for _, n := range sizes {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			// per path: update call, arrival p50, p99, read p50, p99 in
			// ms, one per round
			var door, peer [5][]float64
			w := newPodReadyWake(t, n)
			for round := range rounds {
				for i, v := range w.doorman(t, callers, round) {
					door[i] = append(door[i], v)
				}
				for i, v := range w.bare(t, callers, bare, round) {
					peer[i] = append(peer[i], v)
				}
			}
			for _, r := range []struct {
				name string
				got  [5][]float64
			}{{"doorman", door}, {"bare dialler", peer}} {
				t.Logf("%s, %d held, %d rounds: update call %v ms; arrival p50 %v, p99 %v; read p50 %v, p99 %v", r.name, n, rounds, r.got[0], r.got[1], r.got[2], r.got[3], r.got[4])
				fmt.Printf("| %d | %s | %s | %s | %s | %s | %s |\n", n, r.name, spread(r.got[0]), spread(r.got[1]), spread(r.got[2]), spread(r.got[3]), spread(r.got[4]))
			}
			fmt.Printf("| %d | doorman / bare dialler, p99 of medians | | | %.2f | | %.2f |\n", n, median(door[2])/median(peer[2]), median(door[4])/median(peer[4]))
			if slices.Max(door[4]) > 2000 {
				t.Fatalf("read p99 %v ms: held callers are not moved by the Pod watch", door[4])
			}
		})
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// podReadyWake is one doorman routing the Service "api" of a namespace of
// its own, with n callers to hold in each round.
type podReadyWake struct {
	n         int
	namespace string
	port      int
	key       proxy.ServiceKey
	st        *stack
}

func newPodReadyWake(t *testing.T, n int) *podReadyWake {
	t.Helper()
	w := &podReadyWake{n: n, namespace: newNamespace(t), port: freeDoormanPort(t)}
	createMW(t, w.namespace, w.port, napwakev1alpha1.PhaseResuming, time.Now().Add(-time.Hour))
	createService(t, w.namespace)
	limits := proxy.DefaultLimits()
	limits.HeldPerWorkload, limits.HeldPerSource, limits.HeldPerSourceWorkload = limits.Held, limits.Held, limits.Held
	w.st = startDoormanWith(t, clock.RealClock{}, limits)
	w.key = proxy.ServiceKey{Namespace: w.namespace, Service: "api", PortName: "http"}
	return w
}

// unreadyPod creates the Service's pod serving on podPort, not Ready, and
// waits for the doorman's cache to hold it.
func (w *podReadyWake) unreadyPod(t *testing.T, name string, round, podPort int) *corev1.Pod {
	t.Helper()
	p := createLabelledPod(t, w.namespace, name, fmt.Sprintf("10.244.%d.%d", 1+round/200, 1+round%200), apiSelector, podPort)
	setReady(t, p, false)
	testenv.EventuallyTrue(t, "the not Ready pod in the doorman's cache", func() bool {
		var held corev1.Pod
		return w.st.cache.Get(context.Background(), client.ObjectKeyFromObject(p), &held) == nil && held.ResourceVersion == p.ResourceVersion
	})
	return p
}

// readyNow marks p Ready and returns when the update call was made, and
// its duration in ms.
func readyNow(t *testing.T, p *corev1.Pod) (time.Time, float64) {
	t.Helper()
	t0 := time.Now()
	setReady(t, p, true)
	return t0, float64(time.Since(t0)) / float64(time.Millisecond)
}

// gone deletes p and waits for the doorman's table to be empty again.
func (w *podReadyWake) gone(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if err := k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyTrue(t, "no Ready endpoint left", func() bool { return len(w.st.table.Endpoints(w.key)) == 0 })
}

// doorman holds n callers on the doorman and marks the pod Ready; it
// returns the update call's duration, then arrival p50, p99, read p50 and
// p99, in ms.
func (w *podReadyWake) doorman(t *testing.T, callers *callersProc, round int) []float64 {
	t.Helper()
	podPort := callers.hold(t, w.port, w.n)
	p := w.unreadyPod(t, "api-d"+strconv.Itoa(round), 2*round, podPort)
	testenv.EventuallyTrue(t, "every caller held at its wait", func() bool { return w.st.table.Waiting(w.key) == w.n })
	t0, call := readyNow(t, p)
	got := append([]float64{call}, callers.wait(t, t0, w.n)...)
	callers.hangUp(t)
	w.gone(t, p)
	return got
}

// bare arms the bare dialler's n callers, released by the doorman's Pod
// informer seeing the pod Ready, and marks it Ready; it returns what
// doorman does.
func (w *podReadyWake) bare(t *testing.T, callers, bare *callersProc, round int) []float64 {
	t.Helper()
	port, err := strconv.Atoi(callers.ask(t, fmt.Sprintf("pod %d", w.n), "POD")[0])
	if err != nil {
		t.Fatal(err)
	}
	bare.ask(t, fmt.Sprintf("bare %d", w.n), "ARMED")
	p := w.unreadyPod(t, "api-b"+strconv.Itoa(round), 2*round+1, port)
	inf, err := w.st.cache.GetInformer(context.Background(), &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	fired := make(chan struct{})
	var once sync.Once
	key := client.ObjectKeyFromObject(p) // p itself changes with the update
	release := func(obj any) {
		if q, ok := obj.(*corev1.Pod); ok && client.ObjectKeyFromObject(q) == key && podReady(q) {
			once.Do(func() {
				_, _ = io.WriteString(bare.in, fmt.Sprintf("go %d\n", port))
				close(fired)
			})
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: release, UpdateFunc: func(_, obj any) { release(obj) }})
	if err != nil {
		t.Fatal(err)
	}
	t0, call := readyNow(t, p)
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the Pod watch never showed the pod Ready")
	}
	got := append([]float64{call}, callers.wait(t, t0, w.n)...)
	_ = inf.RemoveEventHandler(reg)
	bare.hangUp(t)
	callers.hangUp(t)
	w.gone(t, p)
	return got
}
