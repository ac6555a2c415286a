package cli

import (
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/kubectl-napwake/internal/render"
	"napwake.dev/shared/testenv"
)

func createDeployment(t *testing.T, ns, name, cpu, memory string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "app", Image: "registry.invalid/app:1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}},
				{Name: "sidecar", Image: "registry.invalid/sidecar:1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("50m")}}},
			}}},
		},
	}
	if err := admin.Create(context.Background(), d); err != nil {
		t.Fatalf("creating Deployment %s: %v", name, err)
	}
}

// TestSavingsSumsEndedPausesThePauseUnderWayAndTheirRequests runs
// `kubectl napwake savings` against a real API server: ended pauses come
// from status.savings, the pause under way from status.pause, requests
// from the Deployment's pod template (every container), and a workload
// whose Deployment is gone counts in replica-hours only.
func TestSavingsSumsEndedPausesThePauseUnderWayAndTheirRequests(t *testing.T) {
	a, b := namespace(t, "savings-a"), namespace(t, "savings-b")
	createDeployment(t, a, "api", "200m", "512Mi") // 250m and 512Mi a replica
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "api"},
		Status: napwakev1alpha1.ManagedWorkloadStatus{
			Phase:   napwakev1alpha1.PhasePaused,
			Pause:   &napwakev1alpha1.PauseStatus{StartedAt: at(-2 * time.Hour), Replicas: 3, Reason: napwakev1alpha1.PauseIdle},
			Savings: &napwakev1alpha1.SavingsStatus{PausedReplicaSeconds: 4 * 3600, Pauses: 2, Since: atp(-72 * time.Hour)},
		},
	})
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{ // no Deployment: requests unknown
		ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "gone"},
		Status: napwakev1alpha1.ManagedWorkloadStatus{
			Phase:   napwakev1alpha1.PhaseRunning,
			Savings: &napwakev1alpha1.SavingsStatus{PausedReplicaSeconds: 3600, Pauses: 1, Since: atp(-24 * time.Hour)},
		},
	})
	createWorkload(t, &napwakev1alpha1.ManagedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "never-paused"},
		Status:     napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning},
	})

	r := run(t, adminKubeconfig, nil, "savings", "-n", a, "-o", "json")
	mustSucceed(t, r)
	var rows []render.SavingsRow
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil {
		t.Fatalf("savings -o json is not JSON: %v\n%s", err, r.out)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows for one namespace: %+v", len(rows), rows)
	}
	got := rows[0]
	// api: 4 h ended + 3 replicas × 2 h under way = 10; gone: 1.
	// CPU and memory only for api: 10 × 0.25 cores, 10 × 0.5 GiB.
	if got.Namespace != a || got.Workloads != 2 || got.Pauses != 4 || !near(got.ReplicaHours, 11) ||
		!near(got.CPUCoreHours, 2.5) || !near(got.MemoryGiBHours, 5) || got.Unknown != 1 ||
		got.Since == nil || !got.Since.Equal(now.Add(-72*time.Hour)) {
		t.Fatalf("savings %+v, want 2 workloads, 4 pauses, 11 replica-hours, 2.5 core-hours, 5 GiB-hours, 1 unknown, since 72h ago", got)
	}

	r = run(t, adminKubeconfig, nil, "savings", "-A")
	mustSucceed(t, r)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^NAMESPACE\s+WORKLOADS\s+PAUSES\s+REPLICA-HOURS\s+CPU CORE-HOURS\s+MEMORY GiB-HOURS\s+SINCE`),
		regexp.MustCompile(`(?m)^` + a + `\s+2\s+4\s+11\.0\s+2\.5\s+5\.0\s`),
		regexp.MustCompile(`(?m)^` + b + `\s+1\s+0\s+0\.0\s+0\.0\s+0\.0\s+-`),
		regexp.MustCompile(`(?m)^total\s`),
		regexp.MustCompile(`CPU and memory leave out \d+ workloads? whose target could not be read`), // other tests' namespaces too
	} {
		if !want.MatchString(r.out) {
			t.Errorf("savings -A lacks a line matching %s:\n%s", want, r.out)
		}
	}
	if r := run(t, adminKubeconfig, nil, "savings", "-o", "yaml"); r.err == nil {
		t.Errorf("savings -o yaml succeeded; want a clear refusal")
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestSavingsReadsTheRequestsOfAnyKindWithAPodTemplate: the requests of a
// target of another kind (testenv's ScalableApp, as an Argo Rollout) come
// from its spec.template, as a Deployment's; one without a template counts
// in replica-hours only, and the table says why.
func TestSavingsReadsTheRequestsOfAnyKindWithAPodTemplate(t *testing.T) {
	ctx := context.Background()
	if err := testenv.InstallScalableCRDs(env.Config); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, "savings-kinds")
	gvk := testenv.ScalableAppGVK
	web := testenv.ScalableApp(gvk, ns, "web", 0, true)
	if err := unstructured.SetNestedSlice(web.Object, []any{map[string]any{
		"name": "app", "image": "registry.invalid/app:1",
		"resources": map[string]any{"requests": map[string]any{"cpu": "500m", "memory": "1Gi"}},
	}}, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*unstructured.Unstructured{web, testenv.ScalableApp(gvk, ns, "bare", 0, false)} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		createWorkload(t, &napwakev1alpha1.ManagedWorkload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.GetName()},
			Spec:       napwakev1alpha1.ManagedWorkloadSpec{TargetRef: napwakev1alpha1.TargetRef{APIVersion: "test.napwake.dev/v1", Kind: "ScalableApp", Name: o.GetName()}},
			Status: napwakev1alpha1.ManagedWorkloadStatus{
				Phase:   napwakev1alpha1.PhaseRunning,
				Savings: &napwakev1alpha1.SavingsStatus{PausedReplicaSeconds: 4 * 3600, Pauses: 1, Since: atp(-24 * time.Hour)},
			},
		})
	}

	r := run(t, adminKubeconfig, nil, "savings", "-n", ns, "-o", "json")
	mustSucceed(t, r)
	var rows []render.SavingsRow
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil {
		t.Fatalf("savings -o json is not JSON: %v\n%s", err, r.out)
	}
	// web: 4 replica-hours × 0.5 cores and 1 GiB; bare: 4 replica-hours, no template.
	if len(rows) != 1 || !near(rows[0].ReplicaHours, 8) || !near(rows[0].CPUCoreHours, 2) || !near(rows[0].MemoryGiBHours, 4) ||
		rows[0].NoTemplate != 1 || rows[0].Unknown != 0 {
		t.Fatalf("savings %+v, want 8 replica-hours, 2 core-hours, 4 GiB-hours, 1 workload without a pod template", rows)
	}
	r = run(t, adminKubeconfig, nil, "savings", "-n", ns)
	mustSucceed(t, r)
	if !strings.Contains(r.out, "CPU and memory leave out 1 workload whose target has no pod template (spec.template)") {
		t.Errorf("savings does not say why a workload's requests are left out:\n%s", r.out)
	}
}
