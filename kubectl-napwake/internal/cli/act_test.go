package cli

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
)

// TestWakeAndPauseSetTheirAnnotations runs the plugin with a clock fixed at
// 2026-10-27, weeks before the API server's: what it stamps must be the
// server's time all the same, or a slow laptop's wake would do nothing.
func TestWakeAndPauseSetTheirAnnotations(t *testing.T) {
	ns := namespace(t, "act")
	for _, tc := range []struct {
		args       []string
		annotation string
		said       string // with %s for the stamp
	}{
		{[]string{"wake", "sleepy", "-n", ns}, napwakev1alpha1.AnnotationWakeRequested, "act/sleepy: wake requested (napwake.dev/wake-requested=%s); it is Paused now\n"},
		{[]string{"pause", "sleepy", "-n", ns}, napwakev1alpha1.AnnotationPauseRequested, "act/sleepy: pause requested (napwake.dev/pause-requested=%s); it is Paused now\n"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			if tc.args[0] == "wake" {
				// Ask: the CLI wakes whatever wake.mode says.
				createWorkload(t, &napwakev1alpha1.ManagedWorkload{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sleepy", Annotations: map[string]string{"keep": "me"}},
					Spec:       napwakev1alpha1.ManagedWorkloadSpec{Wake: napwakev1alpha1.WakeSpec{Mode: napwakev1alpha1.WakeAsk}},
					Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhasePaused,
						Pause: &napwakev1alpha1.PauseStatus{StartedAt: at(-time.Hour), Replicas: 1, Reason: napwakev1alpha1.PauseIdle}},
				})
			}
			before := time.Now().Truncate(time.Second)
			r := run(t, adminKubeconfig, nil, tc.args...)
			after := time.Now()
			mustSucceed(t, r)
			var mw napwakev1alpha1.ManagedWorkload
			if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "sleepy"}, &mw); err != nil {
				t.Fatal(err)
			}
			got := mw.Annotations[tc.annotation]
			stamp, err := time.Parse(time.RFC3339, got)
			if err != nil || stamp.Before(before) || stamp.After(after.Add(2*time.Second)) {
				t.Errorf("%s = %q, want the API server's time, between %s and %s (not the plugin's clock, %s)", tc.annotation, got,
					before.UTC().Format(time.RFC3339), after.Add(2*time.Second).UTC().Format(time.RFC3339), now.Format(time.RFC3339))
			}
			if want := fmt.Sprintf(tc.said, got); r.out != want {
				t.Errorf("printed %q, want %q", r.out, want)
			}
			if !strings.Contains(r.errOut, "note: this machine's clock is") || !strings.Contains(r.errOut, "off the cluster's; the request carries the cluster's time") {
				t.Errorf("said nothing of the plugin's clock being weeks off: %q", r.errOut)
			}
			if mw.Annotations["keep"] != "me" {
				t.Errorf("other annotations were lost: %v", mw.Annotations)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// setPhase writes a phase as the operator would.
func setPhase(t *testing.T, key client.ObjectKey, p napwakev1alpha1.Phase) {
	t.Helper()
	var mw napwakev1alpha1.ManagedWorkload
	if err := admin.Get(context.Background(), key, &mw); err != nil {
		t.Fatal(err)
	}
	mw.Status.Phase = p
	if err := admin.Status().Update(context.Background(), &mw); err != nil {
		t.Fatalf("setting phase %s: %v", p, err)
	}
}

func TestWakeWaitFollowsThePhaseUntilRunning(t *testing.T) {
	ns := namespace(t, "wait")
	key := client.ObjectKey{Namespace: ns, Name: "api"}
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhasePaused, Pause: &napwakev1alpha1.PauseStatus{StartedAt: at(-time.Hour), Replicas: 2, Reason: napwakev1alpha1.PauseIdle}}})

	var r result
	var wg sync.WaitGroup
	wg.Go(func() {
		r = run(t, adminKubeconfig, clock.RealClock{}, "wake", "api", "-n", ns, "--wait", "--timeout", "30s")
	})

	// Play the operator: see the request, resume, then run.
	testenv.EventuallyTrue(t, "the wake annotation", func() bool {
		var mw napwakev1alpha1.ManagedWorkload
		return admin.Get(context.Background(), key, &mw) == nil && mw.Annotations[napwakev1alpha1.AnnotationWakeRequested] != ""
	})
	setPhase(t, key, napwakev1alpha1.PhaseResuming)
	setPhase(t, key, napwakev1alpha1.PhaseRunning)
	wg.Wait()

	mustSucceed(t, r)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^waiting for wait/api to be Running: Paused, 0s$`),
		regexp.MustCompile(`(?m)^waiting for wait/api to be Running: Resuming, [0-9.]+m?s$`),
		regexp.MustCompile(`(?m)^wait/api is Running after [0-9.]+m?s$`),
	} {
		if !want.MatchString(r.out) {
			t.Errorf("output lacks %s:\n%s", want, r.out)
		}
	}
}

func TestPauseWaitGivesUpAtTheTimeout(t *testing.T) {
	ns := namespace(t, "timeout")
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning}})
	start := time.Now()
	r := run(t, adminKubeconfig, clock.RealClock{}, "pause", "api", "-n", ns, "--wait", "--timeout", "1s")
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %s to give up after a 1s timeout", took)
	}
	if r.err == nil {
		t.Fatalf("no error after the timeout; printed:\n%s", r.out)
	}
	want := regexp.MustCompile(`^timeout/api is still Running after 1(\.\d)?s \(--timeout 1s\): see why with ` + "`kubectl napwake describe api -n timeout`$")
	if !want.MatchString(r.err.Error()) {
		t.Errorf("error %q does not match %s", r.err, want)
	}
	// Interrupted (Ctrl-C cancels the context): it says so, not "timeout".
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var err error
	var out syncBuffer
	wg.Go(func() {
		o := &Options{ConfigFlags: genericclioptions.NewConfigFlags(false), IO: genericiooptions.IOStreams{Out: &out, ErrOut: &out}, Clock: clock.RealClock{}}
		cmd := NewCommand(o)
		cmd.SetArgs([]string{"pause", "api", "-n", ns, "--wait", "--kubeconfig", adminKubeconfig})
		err = cmd.ExecuteContext(ctx)
	})
	testenv.EventuallyTrue(t, "the pause request", func() bool {
		var mw napwakev1alpha1.ManagedWorkload
		return admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "api"}, &mw) == nil &&
			mw.Annotations[napwakev1alpha1.AnnotationPauseRequested] != "" && strings.Contains(out.String(), "waiting for")
	})
	cancel()
	wg.Wait()
	if err == nil || !regexp.MustCompile(`^stopped waiting: timeout/api is Running after [0-9.]+m?s; the pause request stands$`).MatchString(err.Error()) {
		t.Errorf("interrupted wait: %v", err)
	}
	// An already-paused workload needs no waiting.
	setPhase(t, client.ObjectKey{Namespace: ns, Name: "api"}, napwakev1alpha1.PhasePaused)
	r = run(t, adminKubeconfig, clock.RealClock{}, "pause", "api", "-n", ns, "--wait")
	mustSucceed(t, r)
	if !strings.HasSuffix(r.out, "timeout/api is already Paused\n") {
		t.Errorf("got %q", r.out)
	}
}

// TestNamesCompleteFromTheCluster: wake, pause, describe and forecast offer
// the namespace's ManagedWorkloads, with their phase, and never files.
func TestNamesCompleteFromTheCluster(t *testing.T) {
	ns := namespace(t, "complete")
	for _, name := range []string{"api", "web"} {
		createWorkload(t, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning}})
	}
	for _, verb := range []string{"wake", "pause", "describe", "forecast"} {
		r := run(t, adminKubeconfig, nil, "__complete", verb, "-n", ns, "")
		mustSucceed(t, r)
		if want := "api\tRunning\nweb\tRunning\n:4\n"; !strings.HasPrefix(r.out, want) {
			t.Errorf("%s completes %q, want it to start %q", verb, r.out, want)
		}
		if r := run(t, adminKubeconfig, nil, "__complete", verb, "-n", ns, "w"); !strings.HasPrefix(r.out, "web\tRunning\n:4\n") {
			t.Errorf("%s w completes %q, want only web", verb, r.out)
		}
	}
	// wake, pause and describe take several: what is given is not offered again.
	for _, verb := range []string{"wake", "pause", "describe"} {
		if r := run(t, adminKubeconfig, nil, "__complete", verb, "api", "-n", ns, ""); !strings.HasPrefix(r.out, "web\tRunning\n:4\n") {
			t.Errorf("%s api <TAB> completes %q, want only web", verb, r.out)
		}
	}
	if r := run(t, adminKubeconfig, nil, "__complete", "forecast", "api", "-n", ns, ""); strings.Contains(r.out, "web\t") {
		t.Errorf("forecast takes one name but completes a second: %q", r.out)
	}
	if r := run(t, adminKubeconfig, nil, "__complete", "status", ""); strings.Contains(r.out, "api\t") {
		t.Errorf("status takes no name but completes %q", r.out)
	}
	r := run(t, adminKubeconfig, nil, "completion", "bash")
	mustSucceed(t, r)
	if !strings.Contains(r.out, "__start_kubectl-napwake") {
		t.Errorf("completion bash printed no bash completion script: %.200q", r.out)
	}
}
