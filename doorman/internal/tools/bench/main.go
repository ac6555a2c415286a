// Command bench measures the doorman's pass-through path beside HAProxy
// (mode tcp) and a direct connection, all on loopback, and the memory and
// wake-to-first-byte of held connections. hack/bench/doorman.sh runs it;
// it prints a Markdown report.
//
// It is a tool: no component imports it, and it sends traffic only to
// loopback and to network namespaces it makes.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"napwake.dev/doorman/internal/addr"
	"napwake.dev/doorman/internal/fdtable"
	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/doorman/internal/tools/firstbyte"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

var (
	duration   = flag.Duration("duration", 2*time.Second, "how long each throughput run lasts")
	passRounds = flag.Int("pass-rounds", 5, "rounds of the pass-through measurements; each path runs once per round")
	rounds     = flag.Int("rounds", 10000, "round trips per latency run")
	haproxy    = flag.String("haproxy", "haproxy", "HAProxy binary")
	held       = flag.Int("held", 2048, "connections held for the memory measurement")
	parts      = flag.String("parts", "pass,memory,wake", "which parts to run, comma-separated: pass (throughput and latency), latency (latency only, -pass-rounds rounds), memory, wake")
	wakeRounds = flag.Int("wake-rounds", 5, "rounds of each wake-to-first-byte run")
	wakeHeld   = flag.String("wake-held", "1,50,256", "held connections for each wake-to-first-byte run, comma-separated")
	clientNS   = flag.String("client-netns", "", "pass part only: the network namespace (a path such as /run/netns/x) the load generator dials from")
	proxyNS    = flag.String("proxy-netns", "", "pass part only: the network namespace HAProxy and the doorman run in")
	backendNS  = flag.String("backend-netns", "", "pass part only: the network namespace the test backends listen in")
	proxyIP    = flag.String("proxy-ip", "127.0.0.1", "the address HAProxy and the doorman listen on")
	backendIP  = flag.String("backend-ip", "127.0.0.1", "the address the test backends listen on")
	proxyCPUs  = flag.String("proxy-cpus", "", "pass part only: run HAProxy and the doorman on these CPUs (taskset -c); run this program elsewhere")
	title      = flag.String("title", "Pass-through on loopback", "the pass part's heading")
	child      = flag.String("child", "", "internal: run the doorman side in this process: pass=<backend>, hold=<n>, wake=<n>")
)

// nopHooks stands in for Kubernetes: the benchmark measures the data path.
type nopHooks struct{}

var _ proxy.Hooks = nopHooks{}

// Wake does nothing.

func (nopHooks) Wake(context.Context, proxy.Workload, string, netip.Addr) error { return nil }

// TurnedAway does nothing.
func (nopHooks) TurnedAway(proxy.Workload) {}

// NotServed does nothing.
func (nopHooks) NotServed(proxy.Workload, string, time.Duration, string) {}
func (nopHooks) Active(context.Context, proxy.Workload) error            { return nil }

// Click wakes at once.
func (nopHooks) Click(context.Context, proxy.Workload, string, netip.Addr) (bool, error) {
	return true, nil
}

// benchDescriptors is the most descriptors one process of the benchmark
// holds: 2048 held connections each way in the memory part, with room.
const benchDescriptors = 8192

func run() error {
	flag.Parse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Every process here, the doorman's peers and the stand-in pods too,
	// grows its descriptor table before it is measured, as the doorman
	// does when it starts (package fdtable): the table's growth stalls a
	// whole process and is no part of what a proxy does per connection.
	if _, err := fdtable.Reserve(benchDescriptors); err != nil {
		return err
	}
	if *child != "" {
		return runChild(ctx, *child)
	}

	if want("pass") {
		if err := passThrough(ctx); err != nil {
			return err
		}
	}
	if want("latency") {
		if err := latencyRounds(ctx); err != nil {
			return err
		}
	}
	if want("memory") {
		if err := heldMemory(ctx, *held); err != nil {
			return err
		}
	}
	if want("wake") {
		if err := wakeTable(); err != nil {
			return err
		}
	}
	return nil
}

// wakeTable measures wake-to-first-byte for each -wake-held, the doorman
// and the bare dialer taking turns for -wake-rounds rounds; each figure is
// the median of its rounds.
func wakeTable() error {
	fmt.Printf("\n## Wake to first byte\n\n")
	fmt.Printf("From the endpoints table showing a Ready pod (what the watcher does on the EndpointSlice event) to each held caller's first byte at the pod, in a doorman process of its own. "+
		"Arrival is the pod socket's receive timestamp (SO_TIMESTAMPNS); read is when the stand-in pod's goroutine read it, which adds the stand-in's own accept loop on the same CPUs. "+
		"The bare dialer is the peer: a process with one goroutine per caller waiting, each connecting and writing the same request when told, the least any proxy must do. "+
		"Each process is measured twice: its first wake (a doorman freshly started, whose goroutine stacks and heap are still to be faulted in) and a later one in the same process, once the first callers have hung up and as many have been held again (a doorman that has served before). "+
		"Every process here grows its descriptor table when it starts, as the doorman does (doorman/internal/fdtable): growing it in the middle of a wake stalls every descriptor the process opens for an RCU grace period. "+
		"Medians of %d rounds, the two taking turns; CPU is the passing process's CPU time.\n\n", *wakeRounds)
	fmt.Printf("| held | path | arrival p50 ms | arrival p99 ms | read p50 ms | read p99 ms | CPU ms |\n|---|---|---|---|---|---|---|\n")
	for _, f := range strings.Split(*wakeHeld, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("-wake-held: %w", err)
		}
		// doorman and bare dialer, each on its process's first wake and on a later one
		var got [4][5][]float64
		add := func(to *[5][]float64, r wakeResult) {
			for i, d := range []time.Duration{r.arrival[0], r.arrival[1], r.read[0], r.read[1], r.cpu} {
				to[i] = append(to[i], ms(d))
			}
		}
		for range *wakeRounds {
			first, later, err := wakeToFirstByte(n)
			if err != nil {
				return err
			}
			add(&got[0], first)
			add(&got[1], later)
			if first, later, err = bareDial(n); err != nil {
				return err
			}
			add(&got[2], first)
			add(&got[3], later)
		}
		for i, name := range []string{"doorman, first wake", "doorman, later wake", "bare dialer, first", "bare dialer, later"} {
			v := got[i]
			fmt.Printf("| %d | %s | %.2f | %s | %.2f | %s | %.1f |\n", n, name, median(v[0]), spread(v[1], "%.2f"), median(v[2]), spread(v[3], "%.2f"), median(v[4]))
		}
	}
	return nil
}

func want(part string) bool { return slices.Contains(strings.Split(*parts, ","), part) }

// passThrough compares throughput and latency of a direct connection,
// HAProxy and the doorman.
// benchPath is one way to the test backends: direct, through HAProxy or
// through a doorman.
type benchPath struct{ name, sink, echo string }

// startPaths starts the test backends (a sink and an echo), one doorman
// process and one HAProxy serving both, and returns the three paths.
func startPaths(ctx context.Context) ([]benchPath, func(), error) {
	sink, err := listen(serveSink)
	if err != nil {
		return nil, nil, err
	}
	echo, err := listen(serveEcho)
	if err != nil {
		return nil, nil, err
	}
	// One doorman process serves both, as one HAProxy process does.
	door, stopDoor, err := doorman(ctx, sink.Addr().String(), echo.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	haSink, haEcho, stopHA, err := startHAProxy(sink.Addr().String(), echo.Addr().String())
	if err != nil {
		stopDoor()
		return nil, nil, err
	}
	paths := []benchPath{
		{"direct", sink.Addr().String(), echo.Addr().String()},
		{"haproxy 2.6 mode tcp", haSink, haEcho},
		{"doorman", door[0], door[1]},
	}
	return paths, func() { stopHA(); stopDoor() }, nil
}

func passThrough(ctx context.Context) error {
	paths, stop, err := startPaths(ctx)
	if err != nil {
		return err
	}
	defer stop()
	// The paths take turns, round after round, so a change in the
	// machine's load touches each alike; each figure is the median of
	// its rounds.
	type samples struct{ t1, t8, p50, p99 []float64 }
	got := make([]samples, len(paths))
	for range *passRounds {
		for i, p := range paths {
			t1, err := throughput(p.sink, 1)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			t8, err := throughput(p.sink, 8)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			p50, p99, err := latency(p.echo)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			g := &got[i]
			g.t1, g.t8 = append(g.t1, t1), append(g.t8, t8)
			g.p50, g.p99 = append(g.p50, us(p50)), append(g.p99, us(p99))
		}
	}
	fmt.Printf("## %s\n\n", *title)
	fmt.Printf("Medians of %d rounds (range in brackets); each round runs every path in turn, %v per throughput run and %d round trips per latency run.\n\n", *passRounds, *duration, *rounds)
	fmt.Printf("| path | 1 stream MiB/s | 8 streams MiB/s | latency p50 µs | latency p99 µs |\n|---|---|---|---|---|\n")
	med := make([]samples, len(paths)) // one value each: the median
	for i, p := range paths {
		g := got[i]
		med[i] = samples{[]float64{median(g.t1)}, []float64{median(g.t8)}, []float64{median(g.p50)}, []float64{median(g.p99)}}
		fmt.Printf("| %s | %s | %s | %s | %s |\n", p.name, spread(g.t1, "%.0f"), spread(g.t8, "%.0f"), spread(g.p50, "%.1f"), spread(g.p99, "%.1f"))
	}
	d, ha, dm := med[0], med[1], med[2]
	fmt.Printf("\nRatios, doorman / HAProxy: throughput 1 stream %.2f, 8 streams %.2f; added latency (over direct) p50 %.1f µs vs %.1f µs, p99 %.1f µs vs %.1f µs.\n\n",
		dm.t1[0]/ha.t1[0], dm.t8[0]/ha.t8[0], dm.p50[0]-d.p50[0], ha.p50[0]-d.p50[0], dm.p99[0]-d.p99[0], ha.p99[0]-d.p99[0])
	gh, gd := got[1], got[2]
	fmt.Printf("Rounds in which the doorman did at least as well as HAProxy: throughput 1 stream %d of %d, 8 streams %d of %d; latency p50 %d, p99 %d.\n\n",
		noWorse(gd.t1, gh.t1, false), *passRounds, noWorse(gd.t8, gh.t8, false), *passRounds, noWorse(gd.p50, gh.p50, true), noWorse(gd.p99, gh.p99, true))
	return nil
}

// noWorse counts the rounds in which a did at least as well as b: no more
// when lower is better, no less otherwise.
func noWorse(a, b []float64, lowerIsBetter bool) int {
	n := 0
	for i := range a {
		if (lowerIsBetter && a[i] <= b[i]) || (!lowerIsBetter && a[i] >= b[i]) {
			n++
		}
	}
	return n
}

// latencyRounds measures only the added latency, for -pass-rounds rounds,
// the paths taking turns, and counts the rounds in which the doorman's
// p50 and p99 were no more than HAProxy's: at a few microseconds apart,
// a median of five rounds alone cannot tell a tie from a difference.
func latencyRounds(ctx context.Context) error {
	paths, stop, err := startPaths(ctx)
	if err != nil {
		return err
	}
	defer stop()
	p50s, p99s := make([][]float64, len(paths)), make([][]float64, len(paths))
	for range *passRounds {
		for i, p := range paths {
			p50, p99, err := latency(p.echo)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			p50s[i], p99s[i] = append(p50s[i], us(p50)), append(p99s[i], us(p99))
		}
	}
	fmt.Printf("## %s\n\n", *title)
	fmt.Printf("Medians of %d rounds (range in brackets); each round runs every path in turn, %d round trips each.\n\n", *passRounds, *rounds)
	fmt.Printf("| path | latency p50 µs | latency p99 µs |\n|---|---|---|\n")
	for i, p := range paths {
		fmt.Printf("| %s | %s | %s |\n", p.name, spread(p50s[i], "%.1f"), spread(p99s[i], "%.1f"))
	}
	ha, dm := 1, 2
	fmt.Printf("\nRounds in which the doorman's latency was no more than HAProxy's: p50 %d of %d, p99 %d of %d. Mean difference, doorman − HAProxy: p50 %+.2f µs, p99 %+.2f µs.\n\n",
		noWorse(p50s[dm], p50s[ha], true), *passRounds, noWorse(p99s[dm], p99s[ha], true), *passRounds, meanDiff(p50s[dm], p50s[ha]), meanDiff(p99s[dm], p99s[ha]))
	return nil
}

// meanDiff is the mean of a[i]-b[i].
func meanDiff(a, b []float64) float64 {
	var d float64
	for i := range a {
		d += a[i] - b[i]
	}
	return d / float64(len(a))
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread formats the median of v and, with more than one value, its range.
func spread(v []float64, f string) string {
	m := fmt.Sprintf(f, median(v))
	if len(v) < 2 {
		return m
	}
	return fmt.Sprintf("%s ["+f+"–"+f+"]", m, slices.Min(v), slices.Max(v))
}

// proxyCommand runs a proxy (HAProxy or a doorman) in -proxy-netns, on
// -proxy-cpus.
func proxyCommand(name string, args ...string) *exec.Cmd {
	argv := append([]string{name}, args...)
	if *proxyNS != "" {
		argv = append([]string{"nsenter", "--net=" + *proxyNS, "--"}, argv...)
	}
	if *proxyCPUs != "" {
		argv = append([]string{"taskset", "-c", *proxyCPUs}, argv...)
	}
	return exec.Command(argv[0], argv[1:]...)
}

// dial connects to target from -client-netns.
func dial(target string) (c net.Conn, err error) {
	err = inNetns(*clientNS, func() error {
		c, err = net.Dial("tcp", target)
		return err
	})
	return c, err
}

// inNetns runs fn on a thread in the network namespace at path ("" is this
// one). A socket stays in the namespace it was made in, whichever thread
// uses it later.
func inNetns(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	defer self.Close()
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening network namespace: %w", err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("entering network namespace %s: %w", path, err)
	}
	defer func() {
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			panic("leaving network namespace: " + err.Error()) // the thread must not return to the pool inside it
		}
	}()
	return fn()
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// listen serves a test backend on -backend-ip in -backend-netns.
func listen(serve func(net.Conn)) (net.Listener, error) {
	var ln net.Listener
	err := inNetns(*backendNS, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(*backendIP, "0"))
		return err
	})
	if err != nil {
		return nil, err
	}
	go firstbyte.AcceptEach(ln, serve)
	return ln, nil
}

// serveSink reads and drops, 64 KiB at a time as a server reading a body
// would (io.Discard's 8 KiB reads would make the sink the bottleneck).
func serveSink(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

func serveEcho(c net.Conn) { defer c.Close(); _, _ = io.Copy(c, c) }

// doorman starts a doorman in a child process, as HAProxy is one, whose
// one route passes to backend (Ready at once).
func doorman(_ context.Context, backends ...string) ([]string, func(), error) {
	ch, err := startChild("pass=" + strings.Join(backends, ","))
	if err != nil {
		return nil, nil, err
	}
	line, err := ch.line()
	if err != nil {
		ch.stop()
		return nil, nil, err
	}
	return strings.Fields(strings.TrimPrefix(line, "LISTEN ")), ch.stop, nil
}

// childProc is this program run with -child, talking line by line.
type childProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startChild(mode string) (*childProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := proxyCommand(self, "-child", mode, "-proxy-ip", *proxyIP)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the doorman process: %w", err)
	}
	return &childProc{cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

func (c *childProc) line() (string, error) {
	l, err := c.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading from the doorman process: %w", err)
	}
	return strings.TrimSpace(l), nil
}

func (c *childProc) send(l string) { _, _ = io.WriteString(c.in, l+"\n") }

func (c *childProc) stop() {
	_ = c.in.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// runChild is the doorman side: it serves, reports on stdout, and exits
// when stdin closes.
func runChild(ctx context.Context, mode string) error {
	kind, arg, _ := strings.Cut(mode, "=")
	if kind == "bare" {
		n, err := strconv.Atoi(arg)
		if err != nil {
			return err
		}
		return runBare(n)
	}
	table := proxy.NewTable()
	m := metrics.New()
	srv := proxy.New(proxy.Config{ListenAddress: *proxyIP, Rules: addr.Rules{AllowLoopback: true}, Limits: oneSourceLimits()}, table, nopHooks{}, m)
	srv.Start(ctx)
	// One route, or for pass one route per backend (comma-separated), all
	// in this one process, as HAProxy serves all of its frontends.
	backends := []string{""}
	if kind == "pass" {
		backends = strings.Split(arg, ",")
	}
	var routes []proxy.Route
	var listen []string
	for i, be := range backends {
		port, err := freePort()
		if err != nil {
			return err
		}
		phase := "Resuming" // already waking: no wake patches
		r := proxy.Route{DoormanPort: port, Service: "b" + strconv.Itoa(i), PortName: "p", Workload: proxy.Workload{Namespace: "n", Name: "w" + strconv.Itoa(i), Phase: phase, MaxWait: time.Hour}}
		if be != "" {
			table.SetEndpoints(r.Key(), []netip.AddrPort{netip.MustParseAddrPort(be)})
		}
		routes = append(routes, r)
		listen = append(listen, net.JoinHostPort(*proxyIP, strconv.Itoa(port)))
	}
	if f := srv.SetRoutes(routes); len(f) > 0 {
		return fmt.Errorf("listening: %v", f)
	}
	r := routes[0]
	heap0, stacks0 := goMem()
	rss0 := rss()
	fmt.Printf("LISTEN %s\n", strings.Join(listen, " "))
	var cpu0 time.Duration
	var prof *os.File
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, val, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "held?": // wait until val connections are held
			n, _ := strconv.Atoi(val)
			deadline := time.Now().Add(30 * time.Second)
			for gaugeValue(m) < float64(n) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond) // bounded wait for the accept loop
			}
			time.Sleep(200 * time.Millisecond) // every held connection at its wait
			fmt.Printf("HELD %v\n", gaugeValue(m))
		case "mem":
			heap, stacks := goMem()
			fmt.Printf("MEM %d %d %d\n", heap-heap0, stacks-stacks0, rss()-rss0)
		case "cpu":
			if prof != nil {
				pprof.StopCPUProfile()
				_ = prof.Close()
			}
			fmt.Printf("CPU %d\n", cpuTime()-cpu0)
		case "unready":
			table.SetEndpoints(r.Key(), nil)
			fmt.Println("UNREADY")
		case "ready":
			if path := os.Getenv("NAPWAKE_BENCH_CPUPROFILE"); path != "" && kind == "wake" {
				if f, err := os.Create(path); err == nil {
					prof = f
					runtime.SetCPUProfileRate(5000) // the wake lasts milliseconds: sample every 200 µs
					_ = pprof.StartCPUProfile(prof)
				}
			}
			cpu0 = cpuTime()
			t0 := time.Now()
			table.SetEndpoints(r.Key(), []netip.AddrPort{netip.MustParseAddrPort(val)})
			fmt.Printf("T0 %d\n", t0.UnixNano())
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return nil
}

func startHAProxy(sink, echo string) (string, string, func(), error) {
	dir, err := os.MkdirTemp("", "doorman-bench-")
	if err != nil {
		return "", "", nil, err
	}
	ports := make([]string, 2)
	for i := range ports {
		if err := inNetns(*proxyNS, func() error {
			ln, err := net.Listen("tcp", net.JoinHostPort(*proxyIP, "0"))
			if err != nil {
				return err
			}
			ports[i] = ln.Addr().String()
			return ln.Close()
		}); err != nil {
			return "", "", nil, err
		}
	}
	cfg := fmt.Sprintf(`global
  maxconn 8000
defaults
  mode tcp
  timeout connect 5s
  timeout client 600s
  timeout server 600s
frontend sink
  bind %s
  default_backend sink
backend sink
  server s %s
frontend echo
  bind %s
  default_backend echo
backend echo
  server e %s
`, ports[0], sink, ports[1], echo)
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return "", "", nil, err
	}
	cmd := proxyCommand(*haproxy, "-f", path, "-db")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return "", "", nil, fmt.Errorf("starting HAProxy: %w", err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = os.RemoveAll(dir) }
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := dial(ports[1])
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return "", "", nil, errors.New("HAProxy did not start listening")
		}
		time.Sleep(20 * time.Millisecond) // bounded wait for a child process
	}
	return ports[0], ports[1], stop, nil
}

// throughput writes 64 KiB chunks on n connections for -duration; MiB/s.
func throughput(target string, n int) (float64, error) {
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	end := time.Now().Add(*duration)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(target)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			buf := make([]byte, 64<<10)
			for time.Now().Before(end) {
				k, err := c.Write(buf)
				total.Add(int64(k))
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(total.Load()) / (1 << 20) / time.Since(start).Seconds(), nil
}

// latency measures small request/response round trips on one kept-alive connection.
func latency(target string) (p50, p99 time.Duration, err error) {
	c, err := dial(target)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	msg := []byte(strings.Repeat("x", 63) + "\n")
	r := bufio.NewReader(c)
	for range 200 { // warm up
		_, _ = c.Write(msg)
		if _, err := r.ReadSlice('\n'); err != nil {
			return 0, 0, err
		}
	}
	lat := make([]time.Duration, 0, *rounds)
	for range *rounds {
		t := time.Now()
		if _, err := c.Write(msg); err != nil {
			return 0, 0, err
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			return 0, 0, err
		}
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
}

func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func goMem() (heap, stacks int64) {
	// Several cycles: each may halve a stack using under a quarter of it,
	// as a long-held connection's stack is shrunk in steady state.
	for range 4 {
		runtime.GC()
	}
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse), int64(m.StackInuse)
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// holdOnChild starts a doorman process in mode and holds n connections
// on it, each having sent req. The caller stops the process and closes
// the connections with the returned func.
func holdOnChild(mode string, n int, req []byte) (*childProc, *heldSet, error) {
	ch, err := startChild(mode)
	if err != nil {
		return nil, nil, err
	}
	line, err := ch.line()
	if err != nil {
		ch.stop()
		return nil, nil, err
	}
	hs := &heldSet{ch: ch, target: strings.TrimPrefix(line, "LISTEN ")}
	if err := hs.hold(n, req); err != nil {
		hs.done()
		return nil, nil, err
	}
	return ch, hs, nil
}

// heldSet is the callers held on a doorman child.
type heldSet struct {
	ch     *childProc
	target string
	conns  []net.Conn
}

// hold connects n callers, each sending req, and waits until the doorman
// holds them all.
func (hs *heldSet) hold(n int, req []byte) error {
	for range n {
		c, err := net.Dial("tcp", hs.target)
		if err == nil {
			hs.conns = append(hs.conns, c)
			_, err = c.Write(req)
		}
		if err != nil {
			return fmt.Errorf("holding connection %d: %w", len(hs.conns)+1, err)
		}
	}
	hs.ch.send("held? " + strconv.Itoa(n))
	if l, err := hs.ch.line(); err != nil || l != "HELD "+strconv.Itoa(n) {
		return fmt.Errorf("holding %d connections: %q %v", n, l, err)
	}
	return nil
}

// hangUp closes the callers.
func (hs *heldSet) hangUp() {
	for _, c := range hs.conns {
		_ = c.Close()
	}
	hs.conns = nil
}

// done closes the callers and stops the child.
func (hs *heldSet) done() {
	hs.hangUp()
	hs.ch.stop()
}

// heldMemory holds n connections (each sent an ordinary request) on a
// doorman in its own process and reports its memory per held connection.
func heldMemory(_ context.Context, n int) error {
	req := []byte("GET /api/items?page=2 HTTP/1.1\r\nHost: api.preview-42.svc\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n")
	ch, hs, err := holdOnChild("hold", n, req)
	if err != nil {
		return err
	}
	defer hs.done()
	ch.send("mem")
	l, err := ch.line()
	if err != nil {
		return err
	}
	var heap, stacks, rssd int64
	if _, err := fmt.Sscanf(l, "MEM %d %d %d", &heap, &stacks, &rssd); err != nil {
		return fmt.Errorf("reading %q: %w", l, err)
	}
	fmt.Printf("## Memory per held connection\n\n%d connections held, each having sent an ordinary %d-byte request, measured in the doorman's own process (socket buffers are kernel memory, outside RSS):\n\n", n, len(req))
	fmt.Printf("| measure | total | per connection |\n|---|---|---|\n")
	for _, r := range []struct {
		name string
		d    int64
	}{{"Go heap in use", heap}, {"goroutine stacks in use", stacks}, {"Go heap + stacks", heap + stacks}, {"process RSS", rssd}} {
		fmt.Printf("| %s | %.1f MiB | %.2f KiB |\n", r.name, float64(r.d)/(1<<20), float64(r.d)/float64(n)/1024)
	}
	return nil
}

// oneSourceLimits are the default caps, except that one source (this
// program) may hold every connection of one workload.
func oneSourceLimits() proxy.Limits {
	l := proxy.DefaultLimits()
	l.HeldPerWorkload, l.HeldPerSource, l.HeldPerSourceWorkload = l.Held, l.Held, l.Held
	return l
}

func gaugeValue(m *metrics.Metrics) float64 {
	mf, err := m.Registry.Gather()
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

// freePort returns a port free on -proxy-ip, in this process's namespace.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(*proxyIP, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// wakeResult is one wake-to-first-byte run: the percentiles of the first
// bytes' arrival at the pod's sockets and of their reading by the
// stand-in pod, and the CPU time of the process passing them on.
type wakeResult struct {
	arrival, read [3]time.Duration // p50, p99, max
	cpu           time.Duration
}

// wakeToFirstByte holds n callers on a doorman in its own process, then
// marks the pod Ready there and measures until each caller's first byte
// reaches the pod: the process's first wake. Then it does it again in the
// same process, as in a doorman that has passed callers on before (its
// goroutine stacks and heap in use already).
func wakeToFirstByte(n int) (first, later wakeResult, err error) {
	req := []byte("GET / HTTP/1.1\r\nHost: b\r\n\r\n")
	ch, hs, err := holdOnChild("wake", n, req)
	if err != nil {
		return first, later, err
	}
	defer hs.done()
	if first, err = firstBytes(ch, n); err != nil {
		return first, later, err
	}
	hs.hangUp()
	ch.send("unready")
	if l, err := ch.line(); err != nil || l != "UNREADY" {
		return first, later, fmt.Errorf("no pod Ready again: %q %v", l, err)
	}
	if err := hs.hold(n, req); err != nil {
		return first, later, err
	}
	later, err = firstBytes(ch, n)
	return first, later, err
}

// bareDial is the peer of wakeToFirstByte: a process of its own with n
// goroutines waiting, each of which connects and writes the same request
// when told the pod's address: the least any proxy passing n held callers
// on must do. It too runs twice in one process.
func bareDial(n int) (first, later wakeResult, err error) {
	ch, err := startChild("bare=" + strconv.Itoa(n))
	if err != nil {
		return first, later, err
	}
	defer ch.stop()
	if l, err := ch.line(); err != nil || l != "READY" {
		return first, later, fmt.Errorf("starting the bare dialer: %q %v", l, err)
	}
	if first, err = firstBytes(ch, n); err != nil {
		return first, later, err
	}
	ch.send("rearm")
	later, err = firstBytes(ch, n)
	return first, later, err
}

// firstBytes tells ch a pod is Ready at a fresh stand-in pod and times
// the n first bytes reaching it.
func firstBytes(ch *childProc, n int) (wakeResult, error) {
	var r wakeResult
	rec := firstbyte.New(n)
	var pod net.Listener
	if err := inNetns(*backendNS, func() (err error) {
		pod, err = rec.Listen(net.JoinHostPort(*backendIP, "0"))
		return err
	}); err != nil {
		return r, err
	}
	defer pod.Close()
	ch.send("ready " + pod.Addr().String())
	l, err := ch.line()
	if err != nil {
		return r, err
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(l, "T0 "), 10, 64)
	if err != nil {
		return r, fmt.Errorf("reading %q: %w", l, err)
	}
	t0 := time.Unix(0, ns)
	if err := rec.Wait(n, 10*time.Second); err != nil {
		return r, err
	}
	ch.send("cpu")
	if l, err := ch.line(); err == nil {
		if v, err := strconv.ParseInt(strings.TrimPrefix(l, "CPU "), 10, 64); err == nil {
			r.cpu = time.Duration(v)
		}
	}
	r.arrival[0], r.arrival[1], r.arrival[2] = rec.KernelPercentiles(t0)
	r.read[0], r.read[1], r.read[2] = rec.Percentiles(t0)
	return r, nil
}

// runBare is the bare dialer's side (see bareDial).
func runBare(n int) error {
	req := []byte("GET / HTTP/1.1\r\nHost: b\r\n\r\n")
	var start chan netip.AddrPort
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	var d net.Dialer
	arm := func() {
		start = make(chan netip.AddrPort)
		for range n {
			wg.Add(1)
			go func(start chan netip.AddrPort) {
				defer wg.Done()
				ap, ok := <-start
				if !ok {
					return
				}
				c, err := d.DialContext(context.Background(), "tcp", ap.String())
				if err != nil {
					fmt.Fprintln(os.Stderr, "bare dialer:", err)
					return
				}
				_, _ = c.Write(req)
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}(start)
		}
	}
	hangUp := func() {
		close(start)
		wg.Wait()
		for _, c := range conns {
			_ = c.Close()
		}
		conns = nil
	}
	arm()
	fmt.Println("READY")
	var cpu0 time.Duration
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, val, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "ready":
			ap, err := netip.ParseAddrPort(val)
			if err != nil {
				return err
			}
			cpu0 = cpuTime()
			t0 := time.Now()
			for range n {
				start <- ap
			}
			fmt.Printf("T0 %d\n", t0.UnixNano())
		case "cpu":
			wg.Wait()
			fmt.Printf("CPU %d\n", cpuTime()-cpu0)
		case "rearm": // hang up and wait again, in the same process
			hangUp()
			arm()
		}
	}
	hangUp()
	return nil
}
