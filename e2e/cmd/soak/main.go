// Command soak is `make soak`'s driver (docs/design/faults.md#the-soak; its
// bounds: docs/bench/soak.md): on a cluster with
// Napwake installed it runs opted-in sample apps through pauses, wakes by
// many held requests at once, doorman pod restarts and the route moves they
// bring, for a duration; every 30 s it samples the operator's and each
// doorman pod's /metrics, and at the end judges the baseline (after a
// warm-up cycle and a quiet period) against the end (after the same quiet
// period once the traffic stops): RSS growth under 10 %, goroutines and
// descriptors back to baseline, the doorman's tables not grown. It exits 1
// on a miss, 2 when the run could not be made.
//
// It runs inside the test bed node's network namespace (hack/soak.sh runs it
// through hack/testbed/cluster.sh exec), where pod IPs and Service names are
// reachable. It must not judge anything itself: package napwake.dev/e2e/soak
// holds the bounds and the arithmetic.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"napwake.dev/e2e/framework"
	"napwake.dev/e2e/soak"
)

type options struct {
	duration, sampleEvery, quiet   time.Duration
	apps, heldPerApp, restartEvery int
	warmup                         int
	warmupFor                      time.Duration
	napwakeNS                      string
	// heapDir, when set, receives the operator's heap profile at the
	// baseline and at the end (operator-baseline.pb.gz, operator-end.pb.gz),
	// from --pprof-bind-address on pprofPort.
	heapDir   string
	pprofPort int
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 30*time.Minute, "how long the traffic runs after the baseline")
	flag.DurationVar(&o.sampleEvery, "sample-every", 30*time.Second, "how often the processes are sampled")
	flag.DurationVar(&o.quiet, "quiet", time.Minute, "the quiet period before the baseline and the end samples (past the doorman's 30 s port linger)")
	flag.IntVar(&o.apps, "apps", 12, "opted-in sample apps")
	flag.IntVar(&o.heldPerApp, "held-per-app", 8, "requests held at once per app in each wake")
	flag.IntVar(&o.warmup, "warmup", 3, "cycles before the baseline at least (the first, and every -restart-every-th, restarts the other doorman pods): the processes' memory settles at its working size")
	flag.DurationVar(&o.warmupFor, "warmup-for", 13*time.Minute, "and at least this long: client-go's event series cache keeps an event up to 12 minutes (its 6-minute sweep), so the operator's working set is whole only after that")
	flag.IntVar(&o.restartEvery, "restart-every", 3, "delete the other doorman pod every this many cycles")
	flag.StringVar(&o.napwakeNS, "napwake-namespace", "napwake-system", "where Napwake is installed")
	flag.StringVar(&o.heapDir, "heap-dir", "", "save the operator's heap profiles at the baseline and the end here (needs the operator's --pprof-bind-address)")
	flag.IntVar(&o.pprofPort, "pprof-port", 8082, "the port of the operator's --pprof-bind-address")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	passed, err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(2)
	}
	if !passed {
		os.Exit(1)
	}
}

// validate refuses the values the loops cannot run with (a zero
// -restart-every divides by zero, a zero -sample-every stops the ticker),
// naming the flag.
func (o options) validate() error {
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"-restart-every must be at least 1", o.restartEvery >= 1},
		{"-apps must be at least 1", o.apps >= 1},
		{"-held-per-app must be at least 1", o.heldPerApp >= 1},
		{"-sample-every must be positive", o.sampleEvery > 0},
		{"-duration must be positive", o.duration > 0},
		{"-warmup and -quiet and -warmup-for must not be negative", o.warmup >= 0 && o.quiet >= 0 && o.warmupFor >= 0},
	} {
		if !f.ok {
			return fmt.Errorf("%s; see -help", f.name)
		}
	}
	return nil
}

func run(ctx context.Context, o options) (bool, error) {
	fw, err := framework.New()
	if err != nil {
		return false, err
	}
	ns, err := fw.CreateNamespace(ctx, "soak", nil)
	if err != nil {
		return false, err
	}
	defer fw.DeleteNamespace(context.Background(), ns)
	d := &driver{fw: fw, o: o, ns: ns}
	if err := d.setUp(ctx); err != nil {
		return false, err
	}
	logf("warm-up: at least %d cycles and %s, of %d apps (pause, %d held requests; the first restarts the doorman pod(s) other than %s)", max(o.warmup, 1), o.warmupFor, o.apps, o.apps*o.heldPerApp, d.kept)
	warming := time.Now()
	var first map[string]soak.Values // after the first warm-up cycle: the growth the warm-up absorbs is printed, not hidden
	for n := 0; n < max(o.warmup, 1) || time.Since(warming) < o.warmupFor; n++ {
		if err := d.cycle(ctx, n%o.restartEvery == 0); err != nil {
			return false, fmt.Errorf("warm-up cycle %d: %w", n+1, err)
		}
		s, err := d.sampleAll(ctx)
		if err != nil {
			return false, fmt.Errorf("sampling after warm-up cycle %d: %w", n+1, err)
		}
		if first == nil {
			first = s
		}
		logf("warm-up cycle %d done, minute %.1f of %.0f: %s", n+1, time.Since(warming).Minutes(), o.warmupFor.Minutes(), d.describe(s))
	}
	baseline, err := d.quietSample(ctx, "baseline")
	if err != nil {
		return false, err
	}
	d.count(func(c *counts) { *c = counts{} })
	start := time.Now()
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		d.sampleEvery(sampling, start)
	}()
	var cycleErr error
	for n := 1; time.Since(start) < o.duration && cycleErr == nil; n++ {
		if err := d.cycle(ctx, n%o.restartEvery == 0); err != nil {
			cycleErr = fmt.Errorf("cycle %d: %w", n, err)
		}
	}
	stopSampling()
	<-sampled
	if cycleErr != nil {
		return false, cycleErr
	}
	logf("traffic stopped after %s: %s", time.Since(start).Round(time.Second), d.snapshot())
	end, err := d.quietSample(ctx, "end")
	if err != nil {
		return false, err
	}
	if f, e := first[d.operator], end[d.operator]; f != nil && e != nil {
		logf("for the record, not judged: %s's RSS after the first warm-up cycle %.1f MiB, at the end %.1f MiB (%+.1f %%); the warm-up absorbs the filling of time-bounded caches", d.operator, f[soak.RSS]/(1<<20), e[soak.RSS]/(1<<20), 100*(e[soak.RSS]/f[soak.RSS]-1))
	}
	return d.verdict(baseline, end), nil
}

func logf(format string, args ...any) {
	fmt.Printf("[%s] %s\n", time.Now().UTC().Format(time.TimeOnly), fmt.Sprintf(format, args...))
}

// verdict prints every finding and whether the run passed.
func (d *driver) verdict(baseline, end map[string]soak.Values) bool {
	var procs []soak.Process
	ok := true
	for _, name := range []string{d.operator, d.kept} {
		b, e := baseline[name], end[name]
		if b == nil || e == nil {
			logf("MISS %s was not sampled at both ends (restarted?)", name)
			ok = false
			continue
		}
		procs = append(procs, soak.Process{Name: name, Baseline: b, End: e, Tables: tableSeries(b)})
		if m := memory(b); m != "" {
			logf("%s's RSS at the baseline %.1f MiB%s; at the end %.1f MiB%s", name, b[soak.RSS]/(1<<20), m, e[soak.RSS]/(1<<20), memory(e))
		}
	}
	fs := soak.Judge(soak.DefaultBounds, procs)
	fmt.Println("verdict:")
	for _, f := range fs {
		fmt.Println("  " + f.String())
	}
	if c := d.snapshot(); c.failed > 0 {
		logf("MISS %d of %d held requests did not get the app's 200", c.failed, c.held)
		ok = false
	}
	moves := end[d.operator].Sum(soak.RouteMoves) - baseline[d.operator].Sum(soak.RouteMoves)
	logf("route moves counted by the operator between baseline and end: %.0f", moves)
	ok = ok && soak.Passed(fs)
	if ok {
		fmt.Println("PASS: RSS drift, goroutines, descriptors and tables within bounds")
	} else {
		fmt.Println("FAIL: see the MISS lines")
	}
	return ok
}
