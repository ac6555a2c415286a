// Command bench measures the doorman's pass-through path beside HAProxy
// (mode tcp) and a direct connection, all on loopback, and the memory and
// wake-to-first-byte of held connections. hack/bench/doorman.sh runs it;
// it prints a Markdown report.
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

	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/doorman/internal/proxy"
	"napwake.dev/doorman/internal/tools/firstbyte"
	"napwake.dev/shared/addr"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

var (
	duration = flag.Duration("duration", 3*time.Second, "how long each throughput run lasts")
	rounds   = flag.Int("rounds", 20000, "round trips per latency run")
	haproxy  = flag.String("haproxy", "haproxy", "HAProxy binary")
	held     = flag.Int("held", 2048, "connections held for the memory measurement")
	child    = flag.String("child", "", "internal: run the doorman side in this process: pass=<backend>, hold=<n>, wake=<n>")
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

func run() error {
	flag.Parse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if *child != "" {
		return runChild(ctx, *child)
	}

	sink, err := listen(serveSink)
	if err != nil {
		return err
	}
	echo, err := listen(serveEcho)
	if err != nil {
		return err
	}

	doorSink, stopA, err := doorman(ctx, sink.Addr().String())
	if err != nil {
		return err
	}
	defer stopA()
	doorEcho, stopB, err := doorman(ctx, echo.Addr().String())
	if err != nil {
		return err
	}
	defer stopB()
	haSink, haEcho, stopHA, err := startHAProxy(sink.Addr().String(), echo.Addr().String())
	if err != nil {
		return err
	}
	defer stopHA()

	fmt.Printf("## Pass-through on loopback\n\n")
	fmt.Printf("| path | 1 stream MiB/s | 8 streams MiB/s | latency p50 µs | latency p99 µs |\n|---|---|---|---|---|\n")
	type row struct {
		name     string
		t1, t8   float64
		p50, p99 time.Duration
	}
	var rows []row
	for _, p := range []struct{ name, sink, echo string }{
		{"direct", sink.Addr().String(), echo.Addr().String()},
		{"haproxy 2.6 mode tcp", haSink, haEcho},
		{"doorman", doorSink, doorEcho},
	} {
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
		rows = append(rows, row{p.name, t1, t8, p50, p99})
		fmt.Printf("| %s | %.0f | %.0f | %.1f | %.1f |\n", p.name, t1, t8, us(p50), us(p99))
	}
	d, ha, dm := rows[0], rows[1], rows[2]
	fmt.Printf("\nRatios, doorman / HAProxy: throughput 1 stream %.2f, 8 streams %.2f; added latency (over direct) p50 %.1f µs vs %.1f µs, p99 %.1f µs vs %.1f µs.\n\n",
		dm.t1/ha.t1, dm.t8/ha.t8, us(dm.p50-d.p50), us(ha.p50-d.p50), us(dm.p99-d.p99), us(ha.p99-d.p99))

	if err := heldMemory(ctx, *held); err != nil {
		return err
	}
	fmt.Printf("\n## Wake to first byte\n\nFrom the endpoints table showing a Ready pod (what the watcher does on the EndpointSlice event) to each held caller's first byte at the pod, in a doorman process of its own; and the CPU time that process spent passing them on (what bounds the latency on an idle machine with 2 CPUs).\n\n| held | p50 ms | p99 ms | max ms | doorman CPU ms |\n|---|---|---|---|---|\n")
	for _, n := range []int{1, 50, 256} {
		p50, p99, mx, cpu, err := wakeToFirstByte(ctx, n)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %.2f | %.2f | %.2f | %.1f |\n", n, ms(p50), ms(p99), ms(mx), ms(cpu))
	}
	return nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func listen(serve func(net.Conn)) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln, nil
}

func serveSink(c net.Conn) { defer c.Close(); _, _ = io.Copy(io.Discard, c) }

func serveEcho(c net.Conn) { defer c.Close(); _, _ = io.Copy(c, c) }

// doorman starts a doorman in a child process, as HAProxy is one, whose
// one route passes to backend (Ready at once).
func doorman(_ context.Context, backend string) (string, func(), error) {
	ch, err := startChild("pass=" + backend)
	if err != nil {
		return "", nil, err
	}
	line, err := ch.line()
	if err != nil {
		ch.stop()
		return "", nil, err
	}
	return strings.TrimPrefix(line, "LISTEN "), ch.stop, nil
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
	cmd := exec.Command(self, "-child", mode)
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
	table := proxy.NewTable()
	m := metrics.New()
	srv := proxy.New(proxy.Config{ListenAddress: "127.0.0.1", Rules: addr.Rules{AllowLoopback: true}, Limits: oneSourceLimits()}, table, nopHooks{}, m)
	srv.Start(ctx)
	port, err := freePort()
	if err != nil {
		return err
	}
	phase := "Resuming" // already waking: no wake patches
	r := proxy.Route{DoormanPort: port, Service: "b", PortName: "p", Workload: proxy.Workload{Namespace: "n", Name: "w", Phase: phase, MaxWait: time.Hour}}
	if kind == "pass" {
		table.SetEndpoints(r.Key(), []netip.AddrPort{netip.MustParseAddrPort(arg)})
	}
	if f := srv.SetRoutes([]proxy.Route{r}); len(f) > 0 {
		return fmt.Errorf("listening: %v", f)
	}
	heap0, stacks0 := goMem()
	rss0 := rss()
	fmt.Printf("LISTEN 127.0.0.1:%d\n", port)
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
		case "ready":
			if path := os.Getenv("NAPWAKE_BENCH_CPUPROFILE"); path != "" && kind == "wake" {
				if prof, err = os.Create(path); err == nil {
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
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", "", nil, err
		}
		ports[i] = ln.Addr().String()
		_ = ln.Close()
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
	cmd := exec.Command(*haproxy, "-f", path, "-db")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return "", "", nil, fmt.Errorf("starting HAProxy: %w", err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = os.RemoveAll(dir) }
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", ports[1])
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
			c, err := net.Dial("tcp", target)
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
	c, err := net.Dial("tcp", target)
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
func holdOnChild(mode string, n int, req []byte) (*childProc, func(), error) {
	ch, err := startChild(mode)
	if err != nil {
		return nil, nil, err
	}
	conns := make([]net.Conn, 0, n)
	done := func() {
		for _, c := range conns {
			_ = c.Close()
		}
		ch.stop()
	}
	line, err := ch.line()
	if err != nil {
		done()
		return nil, nil, err
	}
	target := strings.TrimPrefix(line, "LISTEN ")
	for range n {
		c, err := net.Dial("tcp", target)
		if err == nil {
			conns = append(conns, c)
			_, err = c.Write(req)
		}
		if err != nil {
			done()
			return nil, nil, fmt.Errorf("holding connection %d: %w", len(conns)+1, err)
		}
	}
	ch.send("held? " + strconv.Itoa(n))
	if l, err := ch.line(); err != nil || l != "HELD "+strconv.Itoa(n) {
		done()
		return nil, nil, fmt.Errorf("holding %d connections: %q %v", n, l, err)
	}
	return ch, done, nil
}

// heldMemory holds n connections (each sent an ordinary request) on a
// doorman in its own process and reports its memory per held connection.
func heldMemory(_ context.Context, n int) error {
	req := []byte("GET /api/items?page=2 HTTP/1.1\r\nHost: api.preview-42.svc\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n")
	ch, done, err := holdOnChild("hold", n, req)
	if err != nil {
		return err
	}
	defer done()
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

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// wakeToFirstByte holds n callers on a doorman in its own process, then
// marks the pod Ready there and measures until each caller's first byte
// reaches the pod.
func wakeToFirstByte(_ context.Context, n int) (p50, p99, mx, cpu time.Duration, err error) {
	rec := firstbyte.New(n)
	pod, err := listen(rec.Serve)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer pod.Close()
	ch, done, err := holdOnChild("wake", n, []byte("GET / HTTP/1.1\r\nHost: b\r\n\r\n"))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer done()
	ch.send("ready " + pod.Addr().String())
	l, err := ch.line()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(l, "T0 "), 10, 64)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("reading %q: %w", l, err)
	}
	t0 := time.Unix(0, ns)
	if err := rec.Wait(n, 10*time.Second); err != nil {
		return 0, 0, 0, 0, err
	}
	ch.send("cpu")
	if l, err := ch.line(); err == nil {
		if v, err := strconv.ParseInt(strings.TrimPrefix(l, "CPU "), 10, 64); err == nil {
			cpu = time.Duration(v)
		}
	}
	p50, p99, mx = rec.Percentiles(t0)
	return p50, p99, mx, cpu, nil
}
