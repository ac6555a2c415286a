package api

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/testenv"
)

// The Argo CD health check and ignoreDifferences of docs/gitops.md, tested
// as the page shows them, so the page cannot drift from what Napwake does.

// healthKey is where argocd-cm takes a health check for ManagedWorkloads.
const healthKey = "resource.customizations.health.napwake.dev_ManagedWorkload"

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// gitopsBlock returns the YAML block of docs/gitops.md that contains want.
func gitopsBlock(t *testing.T, want string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range yamlBlock.FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(m[1], want) {
			return m[1]
		}
	}
	t.Fatalf("docs/gitops.md has no yaml block with %q", want)
	return ""
}

// healthCheck is the Lua of the doc's argocd-cm.
func healthCheck(t *testing.T) string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(gitopsBlock(t, healthKey)), &cm); err != nil {
		t.Fatalf("the doc's argocd-cm: %v", err)
	}
	script := cm.Data[healthKey]
	if script == "" {
		t.Fatalf("the doc's argocd-cm has no %s", healthKey)
	}
	return script
}

// luaValue turns an object read from the API server into Lua values as
// Argo CD's util/lua does (its decodeValue).
func luaValue(ls *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case []any:
		t := ls.CreateTable(len(v), 0)
		for _, e := range v {
			t.Append(luaValue(ls, e))
		}
		return t
	case map[string]any:
		t := ls.CreateTable(0, len(v))
		for k, e := range v {
			t.RawSetH(lua.LString(k), luaValue(ls, e))
		}
		return t
	}
	return lua.LNil
}

// health runs the health check on obj as Argo CD does: only the package,
// base and table libraries, obj a global, the returned table's status and
// message.
func health(t *testing.T, script string, obj map[string]any) (status, message string) {
	t.Helper()
	ls := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer ls.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := ls.CallByParam(lua.P{Fn: ls.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			t.Fatal(err)
		}
	}
	ls.SetGlobal("obj", luaValue(ls, obj))
	if err := ls.DoString(script); err != nil {
		t.Fatalf("the health check fails: %v", err)
	}
	hs, ok := ls.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health check returns %v, want a table", ls.Get(-1))
	}
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message"))
}

// TestTheArgoCDHealthCheckReadsEachPhase runs the doc's health check on
// ManagedWorkloads read back from the API server in each phase.
func TestTheArgoCDHealthCheckReadsEachPhase(t *testing.T) {
	script := healthCheck(t)
	ctx := context.Background()
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
	}
	found := cond(napwakev1alpha1.ConditionTargetAvailable, metav1.ConditionTrue, napwakev1alpha1.ReasonTargetFound, "Deployment api exists")
	gone := cond(napwakev1alpha1.ConditionTargetAvailable, metav1.ConditionFalse, napwakev1alpha1.ReasonTargetNotFound, "Deployment api does not exist")
	notRouted := cond(napwakev1alpha1.ConditionWakeOnRequest, metav1.ConditionFalse, napwakev1alpha1.ReasonNoServices, "no Service selects the pods")
	pause := &napwakev1alpha1.PauseStatus{StartedAt: metav1.NewTime(time.Now().Truncate(time.Second)), Replicas: 2, Reason: napwakev1alpha1.PauseIdle}
	for _, tc := range []struct {
		name       string
		status     *napwakev1alpha1.ManagedWorkloadStatus
		behindSpec bool
		want, says string
	}{
		{"not reconciled yet", nil, false, "Progressing", "Waiting"},
		{"running", &napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning, Conditions: []metav1.Condition{found}}, false, "Healthy", "Running"},
		{"pausing", &napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhasePausing, Pause: pause, Conditions: []metav1.Condition{found}}, false, "Progressing", "Pausing"},
		{"paused", &napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhasePaused, Pause: pause, Conditions: []metav1.Condition{found, notRouted}}, false, "Suspended", "Paused"},
		{"resuming", &napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseResuming, Pause: pause, Conditions: []metav1.Condition{found}}, false, "Progressing", "Resuming"},
		{"paused, its target gone", &napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhasePaused, Pause: pause, Conditions: []metav1.Condition{gone}}, false, "Degraded", "does not exist"},
		{"running, its target gone", &napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning, Conditions: []metav1.Condition{gone}}, false, "Degraded", "does not exist"},
		{"running, a new spec not read yet", &napwakev1alpha1.ManagedWorkloadStatus{Phase: napwakev1alpha1.PhaseRunning, Conditions: []metav1.Condition{found}}, true, "Progressing", "new spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mw := minimal(fmt.Sprintf("health-%d", time.Now().UnixNano()))
			if err := k8s.Create(ctx, mw); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k8s.Delete(ctx, mw) })
			if tc.status != nil {
				mw.Status = *tc.status
				mw.Status.ObservedGeneration = mw.Generation
				if err := k8s.Status().Update(ctx, mw); err != nil {
					t.Fatal(err)
				}
			}
			if tc.behindSpec {
				mw.Spec.IdleAfter = &metav1.Duration{Duration: time.Hour}
				if err := k8s.Update(ctx, mw); err != nil {
					t.Fatal(err)
				}
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(napwakev1alpha1.GroupVersion.WithKind("ManagedWorkload"))
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(mw), u); err != nil {
				t.Fatal(err)
			}
			status, message := health(t, script, u.Object)
			if status != tc.want || !strings.Contains(message, tc.says) {
				t.Fatalf("health %q %q, want %q saying %q (status %v)", status, message, tc.want, tc.says, u.Object["status"])
			}
		})
	}
}

// TestTheArgoCDIgnoreDifferencesNameEveryFieldNapwakeWrites: the doc's
// Application ignores spec.replicas of both target kinds, the two
// ScaledObject annotations and the CronJob's spec.suspend and annotation,
// spelled from the constants Napwake writes.
func TestTheArgoCDIgnoreDifferencesNameEveryFieldNapwakeWrites(t *testing.T) {
	var app struct {
		Kind string `json:"kind"`
		Spec struct {
			IgnoreDifferences []struct {
				Group        string   `json:"group"`
				Kind         string   `json:"kind"`
				JSONPointers []string `json:"jsonPointers"`
			} `json:"ignoreDifferences"`
			SyncPolicy struct {
				SyncOptions []string `json:"syncOptions"`
			} `json:"syncPolicy"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(gitopsBlock(t, "ignoreDifferences")), &app); err != nil {
		t.Fatal(err)
	}
	annotation := func(name string) string { return "/metadata/annotations/" + strings.ReplaceAll(name, "/", "~1") }
	want := map[string][]string{
		"apps/Deployment":      {"/spec/replicas"},
		"apps/StatefulSet":     {"/spec/replicas"},
		"keda.sh/ScaledObject": {annotation(napwakev1alpha1.AnnotationKEDAPausedReplicas), annotation(napwakev1alpha1.AnnotationSetPausedReplicas)},
		"batch/CronJob":        {"/spec/suspend", annotation(napwakev1alpha1.AnnotationSuspended)},
	}
	got := map[string][]string{}
	for _, d := range app.Spec.IgnoreDifferences {
		got[d.Group+"/"+d.Kind] = append(got[d.Group+"/"+d.Kind], d.JSONPointers...)
	}
	for kind, pointers := range want {
		for _, p := range pointers {
			if !slices.Contains(got[kind], p) {
				t.Errorf("ignoreDifferences of %s lacks %s (has %v)", kind, p, got[kind])
			}
		}
	}
	if !slices.Contains(app.Spec.SyncPolicy.SyncOptions, "RespectIgnoreDifferences=true") {
		t.Errorf("syncOptions %v lack RespectIgnoreDifferences=true", app.Spec.SyncPolicy.SyncOptions)
	}
}
