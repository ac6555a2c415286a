package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
)

// labelled creates a running ManagedWorkload ns/name with labels.
func labelled(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Status: napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning}})
}

// annotated lists, sorted, the ManagedWorkloads in namespaces that carry
// annotation.
func annotated(t *testing.T, annotation string, namespaces ...string) []string {
	t.Helper()
	var got []string
	for _, ns := range namespaces {
		var list napwakev1alpha1.ManagedWorkloadList
		if err := admin.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, mw := range list.Items {
			if mw.Annotations[annotation] != "" {
				got = append(got, mw.Namespace+"/"+mw.Name)
			}
		}
	}
	slices.Sort(got)
	return got
}

// TestWakeAndPauseTakeSeveralNamesKindsAndSelectors: every name is acted on
// and reported, kubectl's kind/name spellings work, -l picks by label (with
// -A across namespaces), and one failure fails the command only after the
// others were done.
func TestWakeAndPauseTakeSeveralNamesKindsAndSelectors(t *testing.T) {
	a, b := namespace(t, "many-a"), namespace(t, "many-b")
	labelled(t, a, "api", map[string]string{"team": "web"})
	labelled(t, a, "web", map[string]string{"team": "web"})
	labelled(t, a, "db", map[string]string{"team": "data"})
	labelled(t, b, "cache", map[string]string{"team": "web"})

	r := run(t, adminKubeconfig, nil, "wake", "api", "mw/web", "managedworkload.napwake.dev/db", "api", "-n", a)
	mustSucceed(t, r)
	if got := annotated(t, napwakev1alpha1.AnnotationWakeRequested, a, b); !slices.Equal(got, []string{"many-a/api", "many-a/db", "many-a/web"}) {
		t.Errorf("wake of three names (one twice) woke %v", got)
	}
	if n := strings.Count(r.out, ": wake requested ("); n != 3 {
		t.Errorf("reported %d wakes, want 3 (api once):\n%s", n, r.out)
	}

	r = run(t, adminKubeconfig, nil, "pause", "-l", "team=web", "-n", a)
	mustSucceed(t, r)
	if got := annotated(t, napwakev1alpha1.AnnotationPauseRequested, a, b); !slices.Equal(got, []string{"many-a/api", "many-a/web"}) {
		t.Errorf("pause -l team=web -n many-a paused %v", got)
	}
	r = run(t, adminKubeconfig, nil, "pause", "-l", "team=web", "-A")
	mustSucceed(t, r)
	if got := annotated(t, napwakev1alpha1.AnnotationPauseRequested, a, b); !slices.Contains(got, "many-b/cache") {
		t.Errorf("pause -l team=web -A left out many-b/cache: %v", got)
	}
	if !strings.Contains(r.out, "many-b/cache: pause requested") {
		t.Errorf("pause -A -l did not report many-b/cache:\n%s", r.out)
	}

	r = run(t, adminKubeconfig, nil, "pause", "-l", "team=nobody", "-n", a)
	assertOneLine(t, r, "no ManagedWorkloads in namespace many-a match -l team=nobody: see their labels with `kubectl get mw --show-labels`")

	// One unknown among three: the others are still woken, the failure is
	// reported when met, and the command fails naming it (exit code 1).
	r = run(t, adminKubeconfig, nil, "pause", "db", "nope", "mw/web", "-n", a, "--until", "2h")
	if r.err == nil || r.err.Error() != "pause failed for 1 of 3 ManagedWorkloads: many-a/nope" || ExitCode(r.err) != ExitFailed {
		t.Fatalf("got error %v (exit code %d), want it to name many-a/nope", r.err, ExitCode(r.err))
	}
	if !strings.Contains(r.errOut, "\nerror: ManagedWorkload \"nope\" not found in namespace \"many-a\"") || strings.Count(r.errOut, "note: this machine's clock") != 1 {
		t.Errorf("stderr %q does not report the unknown name, or notes the clocks other than once", r.errOut)
	}
	if got := annotated(t, napwakev1alpha1.AnnotationPauseUntil, a); !slices.Equal(got, []string{"many-a/db", "many-a/web"}) {
		t.Errorf("pause --until with one unknown name set pause-until on %v, want db and web", got)
	}
}

func TestDescribeAndStatusTakeSeveralNamesAndSelectors(t *testing.T) {
	ns := namespace(t, "many-describe")
	labelled(t, ns, "api", map[string]string{"team": "web"})
	labelled(t, ns, "web", map[string]string{"team": "web"})
	labelled(t, ns, "db", nil)

	r := run(t, adminKubeconfig, nil, "describe", "api", "mw/db", "-n", ns)
	mustSucceed(t, r)
	if n := len(regexp.MustCompile(`(?m)^Name:`).FindAllString(r.out, -1)); n != 2 {
		t.Errorf("describe of two names printed %d descriptions:\n%s", n, r.out)
	}
	r = run(t, adminKubeconfig, nil, "describe", "-l", "team=web", "-n", ns, "-o", "json")
	mustSucceed(t, r)
	var list napwakev1alpha1.ManagedWorkloadList
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || list.Kind != "ManagedWorkloadList" || len(list.Items) != 2 {
		t.Errorf("describe -l -o json printed %d items of a %q (%v):\n%s", len(list.Items), list.Kind, err, r.out)
	}
	r = run(t, adminKubeconfig, nil, "describe", "api", "nope", "-n", ns)
	if ExitCode(r.err) != ExitFailed || !strings.Contains(r.out, "api") || !strings.Contains(r.errOut, `"nope" not found`) {
		t.Errorf("describe api nope: exit code %d, stdout %q, stderr %q", ExitCode(r.err), r.out, r.errOut)
	}

	r = run(t, adminKubeconfig, nil, "status", "-l", "team=web", "-n", ns, "--no-headers")
	mustSucceed(t, r)
	if rows := regexp.MustCompile(`(?m)^(\S+)\s+Running\s`).FindAllStringSubmatch(r.out, -1); len(rows) != 2 || rows[0][1] != "api" || rows[1][1] != "web" {
		t.Errorf("status -l team=web --no-headers:\n%s", r.out)
	}
}

// TestNoHeadersPrintsTheRowsAlone: one line per workload, no header, none
// of what status prints below its table; savings' table without its header.
func TestNoHeadersPrintsTheRowsAlone(t *testing.T) {
	ns := namespace(t, "no-headers")
	statusFleet(t, ns)
	r := run(t, adminKubeconfig, nil, "status", "-n", ns, "--no-headers")
	mustSucceed(t, r)
	lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "api ") || strings.Contains(r.out, "NAME") || strings.Contains(r.out, "Replica-hours") {
		t.Errorf("status --no-headers printed:\n%s", r.out)
	}
	r = run(t, adminKubeconfig, nil, "status", "-n", namespace(t, "no-headers-empty"), "--no-headers")
	mustSucceed(t, r)
	if r.out != "" {
		t.Errorf("status --no-headers of an empty namespace printed %q", r.out)
	}
	r = run(t, adminKubeconfig, nil, "savings", "-n", ns, "--no-headers")
	mustSucceed(t, r)
	if !strings.HasPrefix(r.out, "no-headers ") || strings.Contains(r.out, "NAMESPACE") {
		t.Errorf("savings --no-headers printed:\n%s", r.out)
	}
}

// TestStatusWatchReprintsOnAChange runs status -w, pauses a workload while
// it watches, and expects the table again with the new phase; cancelling
// the context (Ctrl-C) ends it without an error.
func TestStatusWatchReprintsOnAChange(t *testing.T) {
	ns := namespace(t, "watch")
	labelled(t, ns, "api", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	var err error
	var wg sync.WaitGroup
	wg.Go(func() {
		o := &Options{ConfigFlags: genericclioptions.NewConfigFlags(false), IO: genericiooptions.IOStreams{Out: &out, ErrOut: &out}, Clock: testclock.NewFakeClock(now)}
		cmd := NewCommand(o)
		cmd.SetArgs([]string{"status", "-w", "--no-headers", "-n", ns, "--kubeconfig", adminKubeconfig})
		err = cmd.ExecuteContext(ctx)
	})
	running := regexp.MustCompile(`(?m)^api\s+Running\s`)
	testenv.EventuallyTrue(t, "the first table", func() bool { return running.MatchString(out.String()) })
	setPhase(t, client.ObjectKey{Namespace: ns, Name: "api"}, napwakev1alpha1.PhasePausing)
	testenv.EventuallyTrue(t, "the table again, Pausing", func() bool {
		return regexp.MustCompile(`(?m)^api\s+Running\s.*\n\napi\s+Pausing\s`).MatchString(out.String())
	})
	cancel()
	wg.Wait()
	if err != nil {
		t.Errorf("status -w ended with %v after its context was cancelled", err)
	}
}

// TestNamespacesCompleteFromTheCluster: -n offers the cluster's namespaces.
func TestNamespacesCompleteFromTheCluster(t *testing.T) {
	namespace(t, "complete-ns-one")
	namespace(t, "complete-ns-two")
	r := run(t, adminKubeconfig, nil, "__complete", "status", "-n", "complete-ns-")
	mustSucceed(t, r)
	if want := "complete-ns-one\ncomplete-ns-two\n:4\n"; !strings.HasPrefix(r.out, want) {
		t.Errorf("-n complete-ns-<TAB> offered %q, want it to start %q", r.out, want)
	}
	r = run(t, adminKubeconfig, nil, "__complete", "wake", "api", "--namespace", "")
	if !strings.Contains(r.out, "\ndefault\n") && !strings.HasPrefix(r.out, "default\n") {
		t.Errorf("--namespace <TAB> after a name offered %q, want default among them", r.out)
	}
}
