package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/e2e/framework"
	"napwake.dev/e2e/soak"
)

// Labels of Napwake's pods (the chart's).
const (
	doormanSelector  = "control-plane=doorman"
	operatorSelector = "control-plane=controller-manager"
)

// driver runs the cycles and keeps their counts.
type driver struct {
	fw     *framework.Framework
	o      options
	ns     string
	apps   []string
	mu     sync.Mutex // guards counts: the sampler reads them
	counts counts
	serial int // the next app's number
	// kept is the doorman pod never deleted, so its drift is measurable;
	// operator is the operator's pod.
	kept, operator string
}

type counts struct {
	cycles, pauses, wakes, restarts, replaced, held, failed int
}

func (c counts) String() string {
	return fmt.Sprintf("%d cycles, %d pauses, %d wakes, %d doorman restarts, %d apps replaced, %d held requests (%d failed)",
		c.cycles, c.pauses, c.wakes, c.restarts, c.replaced, c.held, c.failed)
}

// count changes the counts under the lock.
func (d *driver) count(f func(*counts)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.counts)
}

// snapshot copies the counts.
func (d *driver) snapshot() counts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts
}

// setUp deploys the apps, waits for them to run, and picks the pods to watch.
func (d *driver) setUp(ctx context.Context) error {
	for range d.o.apps {
		name, err := d.deployApp(ctx)
		if err != nil {
			return err
		}
		d.apps = append(d.apps, name)
	}
	if err := d.allRunning(ctx); err != nil {
		return err
	}
	doormen, err := d.podNames(ctx, doormanSelector)
	if err != nil {
		return err
	}
	if len(doormen) < 2 {
		return fmt.Errorf("want 2 doorman pods to restart one and keep the other, have %v", doormen)
	}
	ops, err := d.podNames(ctx, operatorSelector)
	if err != nil {
		return err
	}
	if len(ops) != 1 {
		return fmt.Errorf("want one operator pod, have %v", ops)
	}
	d.kept, d.operator = doormen[0], ops[0]
	return nil
}

// deployApp deploys the next sample app, opted in, pausing only when asked.
func (d *driver) deployApp(ctx context.Context) (string, error) {
	a := framework.SampleApp{
		Name: fmt.Sprintf("app-%03d", d.serial), Namespace: d.ns, Replicas: 1, StartupDelay: time.Second,
		Labels:      map[string]string{napwakev1alpha1.LabelEnabled: "true"},
		Annotations: map[string]string{napwakev1alpha1.AnnotationIdleAfter: "6h"},
	}
	d.serial++
	return a.Name, d.fw.Deploy(ctx, a)
}

// replaceApp deletes one app (round robin) with its Service and deploys a
// new one in its place, so that a table keyed by workload or Service that
// is never emptied grows with the cycles instead of hiding behind the same
// names.
func (d *driver) replaceApp(ctx context.Context) error {
	i := d.snapshot().cycles % len(d.apps)
	old := d.apps[i]
	if err := d.fw.Clientset.AppsV1().Deployments(d.ns).Delete(ctx, old, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting Deployment %s: %w", old, err)
	}
	if err := d.fw.Clientset.CoreV1().Services(d.ns).Delete(ctx, old, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting Service %s: %w", old, err)
	}
	name, err := d.deployApp(ctx)
	if err != nil {
		return err
	}
	d.apps[i] = name
	d.count(func(c *counts) { c.replaced++ })
	return d.allRunning(ctx)
}

// cycle pauses every app, restarts the other doorman pod(s) if asked (the
// routes move off them), then wakes every app by requests held at once.
func (d *driver) cycle(ctx context.Context, restart bool) error {
	if err := d.pauseAll(ctx); err != nil {
		return err
	}
	if restart {
		if err := d.restartDoormen(ctx); err != nil {
			return err
		}
	}
	d.holdAll(ctx)
	if err := d.allRunning(ctx); err != nil {
		return err
	}
	if err := d.replaceApp(ctx); err != nil {
		return err
	}
	d.count(func(c *counts) { c.cycles++ })
	return nil
}

// pauseAll asks each app to pause, again if it has not started within 5 s
// (a request counted in the same second can outrank it), until every one
// is Paused and routed to exactly the Ready doorman pods.
func (d *driver) pauseAll(ctx context.Context) error {
	for _, a := range d.apps {
		if err := d.fw.RequestPause(ctx, d.ns, a); err != nil {
			return err
		}
	}
	if err := d.pausedAndRouted(ctx); err != nil {
		return err
	}
	d.count(func(c *counts) { c.pauses += len(d.apps) })
	return nil
}

// pausedAndRouted waits until every app is Paused and routed to exactly the
// Ready doorman pods, asking again for the pause of any still Running.
func (d *driver) pausedAndRouted(ctx context.Context) error {
	asked := time.Now()
	return poll(ctx, 2*time.Minute, "every app Paused and routed", func() (bool, error) {
		doormen, err := d.fw.ReadyDoormanIPs(ctx, d.o.napwakeNS)
		if err != nil {
			return false, err
		}
		again := time.Since(asked) > 5*time.Second
		done := true
		for _, a := range d.apps {
			switch d.fw.Phase(ctx, d.ns, a) {
			case napwakev1alpha1.PhasePaused:
				addrs, err := d.fw.DoormanSliceAddresses(ctx, d.ns, a)
				if err != nil {
					return false, err
				}
				done = done && strings.Join(addrs, ",") == strings.Join(doormen, ",")
			case napwakev1alpha1.PhaseRunning:
				done = false
				if again {
					_ = d.fw.RequestPause(ctx, d.ns, a)
				}
			default:
				done = false
			}
		}
		if again {
			asked = time.Now()
		}
		return done, nil
	})
}

// restartDoormen deletes every doorman pod but the kept one, waits for the
// paused apps' routes to leave them, and for the replacement to be Ready
// and routed too.
func (d *driver) restartDoormen(ctx context.Context) error {
	pods, err := d.fw.Clientset.CoreV1().Pods(d.o.napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: doormanSelector})
	if err != nil {
		return err
	}
	var gone []string
	for _, p := range pods.Items {
		if p.Name == d.kept || p.DeletionTimestamp != nil {
			continue
		}
		if err := d.fw.Clientset.CoreV1().Pods(d.o.napwakeNS).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		gone = append(gone, p.Status.PodIP)
		d.count(func(c *counts) { c.restarts++ })
	}
	if err := poll(ctx, 30*time.Second, "routes off the deleted doorman pod", func() (bool, error) {
		for _, a := range d.apps {
			addrs, err := d.fw.DoormanSliceAddresses(ctx, d.ns, a)
			if err != nil {
				return false, err
			}
			for _, ip := range gone {
				if contains(addrs, ip) {
					return false, nil
				}
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	if err := poll(ctx, 2*time.Minute, "the replacement doorman pod Ready", func() (bool, error) {
		ips, err := d.fw.ReadyDoormanIPs(ctx, d.o.napwakeNS)
		return len(ips) == len(pods.Items), err
	}); err != nil {
		return err
	}
	// The apps paused routed to every Ready doorman pod, the new one too.
	return d.pausedAndRouted(ctx)
}

// holdAll sends heldPerApp requests to every paused app's Service at once,
// each held by the doorman until its app is Ready, and counts the answers.
func (d *driver) holdAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, a := range d.apps {
		url := "http://" + a + "." + d.ns + ".svc/"
		for range d.o.heldPerApp {
			wg.Go(func() {
				resp, err := framework.HTTPGet(ctx, url, map[string]string{"User-Agent": "napwake-soak/1"}, 2*time.Minute)
				failed := err != nil || resp.Status != 200
				d.count(func(c *counts) {
					c.held++
					if failed {
						c.failed++
						if c.failed <= 5 {
							logf("held request to %s: status %d, %v", url, resp.Status, err)
						}
					}
				})
			})
		}
	}
	wg.Wait()
	d.count(func(c *counts) { c.wakes += len(d.apps) })
}

// allRunning waits until every app is Running with its replica Ready.
func (d *driver) allRunning(ctx context.Context) error {
	return poll(ctx, 2*time.Minute, "every app Running and Ready", func() (bool, error) {
		for _, a := range d.apps {
			if d.fw.Phase(ctx, d.ns, a) != napwakev1alpha1.PhaseRunning {
				return false, nil
			}
			if n, err := d.fw.ReadyReplicas(ctx, d.ns, a); err != nil || n != 1 {
				return false, nil //nolint:nilerr // not there yet: poll again
			}
		}
		return true, nil
	})
}

func (d *driver) podNames(ctx context.Context, selector string) ([]string, error) {
	pods, err := d.fw.Clientset.CoreV1().Pods(d.o.napwakeNS).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods %s: %w", selector, err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// poll calls cond every 250 ms until it holds, fails, or within passes.
func poll(ctx context.Context, within time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: not within %s", what, within)
		case <-t.C:
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// tableSeries lists the table-entry series a process exports.
func tableSeries(v soak.Values) []string {
	var out []string
	for k := range v {
		if strings.HasPrefix(k, soak.TableEntries+"{") {
			out = append(out, k)
		}
	}
	return out
}
