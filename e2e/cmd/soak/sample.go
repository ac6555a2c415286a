package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"napwake.dev/e2e/framework"
	"napwake.dev/e2e/soak"
)

// Where each process serves /metrics (the chart's container ports).
const (
	operatorMetricsPort = 8080
	doormanMetricsPort  = 8443
)

var wanted = []string{soak.RSS, soak.Goroutines, soak.FDs, soak.TableEntries, soak.RouteMoves,
	soak.HeapInuse, soak.HeapIdle, soak.HeapReleased}

// sampleAll scrapes the operator and every doorman pod, by pod name.
func (d *driver) sampleAll(ctx context.Context) (map[string]soak.Values, error) {
	out := map[string]soak.Values{}
	for _, p := range []struct {
		selector string
		port     int
	}{{operatorSelector, operatorMetricsPort}, {doormanSelector, doormanMetricsPort}} {
		pods, err := d.fw.Clientset.CoreV1().Pods(d.o.napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: p.selector})
		if err != nil {
			return nil, fmt.Errorf("listing pods %s: %w", p.selector, err)
		}
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp != nil || pod.Status.PodIP == "" {
				continue
			}
			url := fmt.Sprintf("http://%s:%d/metrics", pod.Status.PodIP, p.port)
			resp, err := framework.HTTPGet(ctx, url, nil, 10*time.Second)
			if err != nil || resp.Status != 200 {
				logf("scraping %s (%s): status %d, %v", pod.Name, url, resp.Status, err)
				continue
			}
			out[pod.Name] = soak.ParseMetrics(resp.Body, wanted...)
		}
	}
	for pod, v := range procMemory() {
		if out[pod] != nil {
			maps.Copy(out[pod], v)
		}
	}
	return out, nil
}

// quietSample waits the quiet period with no traffic, then takes three
// samples 10 s apart and keeps each process's median.
func (d *driver) quietSample(ctx context.Context, what string) (map[string]soak.Values, error) {
	logf("%s: %s quiet, then 3 samples 10 s apart", what, d.o.quiet)
	if err := pause(ctx, d.o.quiet); err != nil {
		return nil, err
	}
	per := map[string][]soak.Values{}
	for i := range 3 {
		if i > 0 {
			if err := pause(ctx, 10*time.Second); err != nil {
				return nil, err
			}
		}
		s, err := d.sampleAll(ctx)
		if err != nil {
			return nil, err
		}
		for name, v := range s {
			per[name] = append(per[name], v)
		}
	}
	out := map[string]soak.Values{}
	for name, vs := range per {
		if len(vs) == 3 {
			out[name] = soak.Median(vs)
		}
	}
	logf("%s: %s", what, d.describe(out))
	if d.o.heapDir != "" {
		d.saveHeap(ctx, what)
	}
	return out, nil
}

// saveHeap saves the operator's heap profile, taken after a collection, as
// <heapDir>/operator-<what>.pb.gz; a failure is told, not fatal.
func (d *driver) saveHeap(ctx context.Context, what string) {
	pods, err := d.fw.Clientset.CoreV1().Pods(d.o.napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
	if err != nil || len(pods.Items) == 0 || pods.Items[0].Status.PodIP == "" {
		logf("heap profile %s: no operator pod to ask (%v)", what, err)
		return
	}
	url := fmt.Sprintf("http://%s:%d/debug/pprof/heap?gc=1", pods.Items[0].Status.PodIP, d.o.pprofPort)
	resp, err := framework.HTTPGet(ctx, url, nil, 30*time.Second)
	if err != nil || resp.Status != 200 {
		logf("heap profile %s (%s): status %d, %v; is the operator's --pprof-bind-address set?", what, url, resp.Status, err)
		return
	}
	path := filepath.Join(d.o.heapDir, "operator-"+what+".pb.gz")
	if err := os.MkdirAll(d.o.heapDir, 0o755); err != nil {
		logf("heap profile %s: %v", what, err)
		return
	}
	if err := os.WriteFile(path, []byte(resp.Body), 0o644); err != nil {
		logf("heap profile %s: %v", what, err)
		return
	}
	logf("heap profile %s: %s (%d bytes)", what, path, len(resp.Body))
}

// sampleEvery prints, every sampleEvery until ctx ends, the minute, the
// counts and each process's numbers.
func (d *driver) sampleEvery(ctx context.Context, start time.Time) {
	t := time.NewTicker(d.o.sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := d.sampleAll(ctx)
		if err != nil {
			if ctx.Err() == nil {
				logf("sampling: %v", err)
			}
			continue
		}
		logf("minute %.1f of %.0f: %s; %s", time.Since(start).Minutes(), d.o.duration.Minutes(), d.snapshot(), d.describe(s))
	}
}

// describe renders each process's sample: the operator first, then the
// kept doorman pod, then the others.
func (d *driver) describe(s map[string]soak.Values) string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	rank := func(n string) int {
		switch n {
		case d.operator:
			return 0
		case d.kept:
			return 1
		}
		return 2
	}
	sort.Slice(names, func(i, j int) bool {
		if rank(names[i]) != rank(names[j]) {
			return rank(names[i]) < rank(names[j])
		}
		return names[i] < names[j]
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		v := s[n]
		role := map[int]string{0: "operator", 1: "doorman (kept)", 2: "doorman"}[rank(n)]
		line := fmt.Sprintf("%s %s RSS %.1f MiB%s, %.0f goroutines, %.0f fds", role, n, v[soak.RSS]/(1<<20), memory(v), v[soak.Goroutines], v[soak.FDs])
		if tables := tableSeries(v); len(tables) > 0 {
			sort.Strings(tables)
			var ts []string
			for _, t := range tables {
				ts = append(ts, fmt.Sprintf("%s=%.0f", strings.TrimSuffix(strings.TrimPrefix(t, soak.TableEntries+`{table="`), `"}`), v[t]))
			}
			line += ", tables " + strings.Join(ts, " ")
		}
		parts = append(parts, line)
	}
	return strings.Join(parts, "; ")
}

// memory says what the RSS is made of, where the sample has it: the
// kernel's anonymous and file-backed parts, and the Go heap's spans in use
// and the freed ones the runtime still holds.
func memory(v soak.Values) string {
	mib := func(name string) float64 { return v[name] / (1 << 20) }
	var parts []string
	if _, ok := v[soak.RSSAnon]; ok {
		parts = append(parts, fmt.Sprintf("anon %.1f, file %.1f", mib(soak.RSSAnon), mib(soak.RSSFile)))
	}
	if _, ok := v[soak.HeapInuse]; ok {
		parts = append(parts, fmt.Sprintf("heap in use %.1f, freed and held %.1f", mib(soak.HeapInuse), mib(soak.HeapIdle)-mib(soak.HeapReleased)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// pause waits d or until ctx ends: the quiet period is a length of time
// with nothing happening, not a wait for a condition.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
