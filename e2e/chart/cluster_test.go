package chart

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"napwake.dev/shared/testenv"
)

// pollTimeout bounds every wait for the API server to catch up (an admission
// policy compiled, a CRD served).
const pollTimeout = 30 * time.Second

// noHooks leaves out the uninstall hook's Job: only helm uninstall creates
// it, and envtest runs no Job controller to complete it, so helm would wait
// for it until its timeout (docs/uninstall.md says what it does, and the
// end-to-end suite runs it).
const noHooks = "--no-hooks"

// warnings collects the API server's Warning headers (Pod Security's "would
// violate" for Deployments in an enforcing namespace comes this way).
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

var _ rest.WarningHandler = (*warnings)(nil)

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// cluster is a set of clients for one user of the envtest API server.
type cluster struct {
	dyn      dynamic.Interface
	kube     kubernetes.Interface
	mapper   meta.ResettableRESTMapper
	warnings *warnings
}

// clientsAs returns clients acting as user (impersonated, with the groups the
// API server gives a ServiceAccount); "" is the admin.
func clientsAs(t testing.TB, user string) *cluster {
	t.Helper()
	c := rest.CopyConfig(cfg)
	w := &warnings{}
	c.WarningHandler = w
	if user != "" {
		groups := []string{"system:authenticated"}
		if rest, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
			groups = append(groups, "system:serviceaccounts", "system:serviceaccounts:"+strings.Split(rest, ":")[0])
		}
		c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	}
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{dyn: dyn, kube: kube, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), warnings: w}
}

// resource returns the dynamic client for an object's kind, in its namespace.
func (c *cluster) resource(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.mapper.Reset() // a CRD created since discovery was cached
		if m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, fmt.Errorf("mapping %s: %w", gvk, err)
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return c.dyn.Resource(m.Resource), nil
}

// apply server-side applies an object; dryRun leaves nothing behind.
func (c *cluster) apply(ctx context.Context, u *unstructured.Unstructured, dryRun bool) error {
	r, err := c.resource(u)
	if err != nil {
		return err
	}
	opts := metav1.ApplyOptions{FieldManager: "napwake-chart-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := r.Apply(ctx, u.GetName(), u, opts); err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// restrictedNamespace creates a namespace enforcing Pod Security "restricted".
func restrictedNamespace(t testing.TB, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	_, err := clientsAs(t, "").kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// monitoringCRDs installs stand-ins for the Prometheus Operator's CRDs, so
// the ServiceMonitor and PrometheusRule can be dry-run too.
func monitoringCRDs(t testing.TB) {
	t.Helper()
	c := clientsAs(t, "")
	data, err := os.ReadFile(filepath.Join("testdata", "monitoring-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crds, err := decode(string(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if err := c.apply(context.Background(), crd, false); err != nil {
			t.Fatal(err)
		}
	}
	testenv.EventuallyWithin(t, pollTimeout, testenv.EventuallyInterval, "monitoring CRDs served", func() error {
		c.mapper.Reset()
		_, err := c.mapper.RESTMapping(schema.GroupKind{Group: "monitoring.coreos.com", Kind: "PrometheusRule"}, "v1")
		return err
	})
}

// TestEveryObjectPassesAServerSideDryRun applies every object the chart
// renders, with every option on and its CRD, with a server-side dry run in a
// namespace enforcing Pod Security "restricted": the API server's validation,
// CEL compilation of the admission policies and Pod Security all see them.
func TestEveryObjectPassesAServerSideDryRun(t *testing.T) {
	const ns = "napwake-dryrun"
	restrictedNamespace(t, ns)
	monitoringCRDs(t)
	objs := render(t, append([]string{"--namespace", ns}, everythingOn...)...)
	c := clientsAs(t, "")
	ctx := context.Background()
	for _, u := range objs {
		if err := c.apply(ctx, u, true); err != nil {
			t.Error(err)
			continue
		}
		if w := c.warnings.take(); len(w) != 0 {
			t.Errorf("%s/%s: API server warns %q", u.GetKind(), u.GetName(), w)
		}
	}
	// Pod Security enforces on pods, not Deployments: create each pod
	// template as a Pod (dry run) in the enforcing namespace.
	for _, u := range objs.ofKind("Deployment") {
		d := objs.deployment(t, u.GetName())
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-pod", Namespace: ns, Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
		if _, err := c.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("%s's pod refused in a restricted namespace: %v", d.Name, err)
		}
		// The namespace really enforces: the same pod without its security contexts is refused.
		pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext = nil, nil
		_, err := c.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
			t.Errorf("a pod without security contexts was not refused by Pod Security: %v", err)
		}
	}
	// Nothing was left behind by the dry run.
	if _, err := c.kube.AppsV1().Deployments(ns).Get(ctx, operatorName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry run left the operator's Deployment: %v", err)
	}
}

// kubeconfig writes a kubeconfig for the envtest admin, for helm.
func kubeconfig(t testing.TB) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHelmInstallUpgradeUninstall installs the chart with helm on a cluster
// without the CRD, proves its RBAC and admission policies for real on what
// it installed, upgrades only the doorman's image (the operator's Deployment
// untouched, the wake key kept), and uninstalls, leaving only the CRD and
// the ManagedWorkloads (crds.keep).
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	removeCRD(t)
	restrictedNamespace(t, namespace)
	kc := kubeconfig(t)
	if _, err := runHelm("install", release, chartDir(t), "--namespace", namespace, "--kubeconfig", kc); err != nil {
		t.Fatal(err)
	}
	admin := clientsAs(t, "")
	ctx := context.Background()
	crdServed(t, nil)
	installed := render(t, noHooks)
	for _, u := range installed {
		r, err := admin.resource(u)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Get(ctx, u.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("helm install did not create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}

	t.Run("the admission policies", testAdmissionPolicies)
	t.Run("the RBAC", testRBAC)
	t.Run("people's access through view, edit and admin", testPeopleAccess)

	// The doorman fills its wake key (as itself: its Role allows it).
	doorman := clientsAs(t, doormanUser)
	key, err := doorman.kube.CoreV1().Secrets(namespace).Get(ctx, wakeKeySecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key.Data = map[string][]byte{"key": []byte("0123456789abcdef0123456789abcdef")}
	if _, err := doorman.kube.CoreV1().Secrets(namespace).Update(ctx, key, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the doorman cannot fill its wake key: %v", err)
	}

	before, err := admin.kube.AppsV1().Deployments(namespace).Get(ctx, operatorName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runHelm("upgrade", release, chartDir(t), "--namespace", namespace, "--kubeconfig", kc,
		"--reuse-values", "--set", "doorman.image.tag=0.2.0"); err != nil {
		t.Fatal(err)
	}
	after, err := admin.kube.AppsV1().Deployments(namespace).Get(ctx, operatorName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("upgrading the doorman's image touched the operator's Deployment (resourceVersion %s -> %s)", before.ResourceVersion, after.ResourceVersion)
	}
	dm, err := admin.kube.AppsV1().Deployments(namespace).Get(ctx, doormanName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := dm.Spec.Template.Spec.Containers[0].Image; img != "napwake-doorman:0.2.0" {
		t.Errorf("doorman image after upgrade %q, want napwake-doorman:0.2.0", img)
	}
	if v := dm.Spec.Template.Labels["app.kubernetes.io/version"]; v != "0.2.0" {
		t.Errorf("doorman pods' version label after upgrade %q, want 0.2.0", v)
	}
	key, err = admin.kube.CoreV1().Secrets(namespace).Get(ctx, wakeKeySecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(key.Data["key"]) != "0123456789abcdef0123456789abcdef" {
		t.Errorf("helm upgrade reset the wake key: data %v", key.Data)
	}

	if _, err := runHelm("uninstall", release, "--namespace", namespace, "--kubeconfig", kc, noHooks); err != nil {
		t.Fatal(err)
	}
	for _, u := range installed {
		if u.GetKind() == "CustomResourceDefinition" {
			continue // kept: below
		}
		r, err := admin.resource(u)
		if err != nil {
			t.Fatal(err)
		}
		// Deletion is immediate: nothing here carries a finalizer, and envtest runs no controllers.
		if _, err := r.Get(ctx, u.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("helm uninstall left %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if _, err := admin.dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{}); err != nil {
		t.Errorf("the CRD went with helm uninstall (crds.keep is on by default): %v", err)
	}
	if _, err := admin.dyn.Resource(mwGVR).Namespace(appNS).Get(ctx, "api", metav1.GetOptions{}); err != nil {
		t.Errorf("a ManagedWorkload went with helm uninstall (crds.keep is on by default): %v", err)
	}
}

// managedWorkload creates a ManagedWorkload as the admin and returns its name.
func managedWorkload(t *testing.T, ns, name string, annotations map[string]string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "napwake.dev/v1alpha1", "kind": "ManagedWorkload",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"targetRef": map[string]any{"kind": "Deployment", "name": name}},
	}}
	u.SetAnnotations(annotations)
	if err := clientsAs(t, "").apply(context.Background(), u, false); err != nil {
		t.Fatal(err)
	}
}

var mwGVR = schema.GroupVersionResource{Group: "napwake.dev", Version: "v1alpha1", Resource: "managedworkloads"}

// patchMW merge-patches a ManagedWorkload in appNS as a user.
func patchMW(t *testing.T, c *cluster, name, patch string, subresources ...string) error {
	t.Helper()
	_, err := c.dyn.Resource(mwGVR).Namespace(appNS).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, subresources...)
	return err
}

func wantDenied(t *testing.T, err error, what, message string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed, want denied", what)
		return
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want denied by admission", what, err)
		return
	}
	if !strings.Contains(err.Error(), message) {
		t.Errorf("%s: denied with %q, want a message with %q", what, err.Error(), message)
	}
}

func wantAllowed(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v, want allowed", what, err)
	}
}

const (
	appNS        = "preview-42"
	otherSA      = "system:serviceaccount:" + appNS + ":ci"
	onlyDoorman  = "may set napwake.dev/last-request, napwake.dev/last-request-from or napwake.dev/turned-away"
	onlyWakeAnns = "the doorman may change only the annotations"
	onlyOperator = "may change a ManagedWorkload's status"
)

func testAdmissionPolicies(t *testing.T) {
	ctx := context.Background()
	admin := clientsAs(t, "")
	if _, err := admin.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// Another ServiceAccount with every right on ManagedWorkloads, so only
	// the admission policies can stop it.
	grantAll(t, appNS, otherSA)
	managedWorkload(t, appNS, "api", nil)
	doorman, operator, other := clientsAs(t, doormanUser), clientsAs(t, operatorUser), clientsAs(t, otherSA)

	// The policies take effect once the API server has compiled them: poll
	// on a ManagedWorkload of its own, a new value each try (an unchanged
	// value passes).
	managedWorkload(t, appNS, "probe", nil)
	try := 0
	testenv.EventuallyWithin(t, pollTimeout, testenv.EventuallyInterval, "the policy refusing others' last-request", func() error {
		try++
		if err := patchMW(t, other, "probe", fmt.Sprintf(`{"metadata":{"annotations":{"napwake.dev/last-request-from":"10.0.0.%d"}}}`, try%250)); err == nil {
			return fmt.Errorf("another ServiceAccount set last-request-from")
		}
		return nil
	})
	testenv.EventuallyWithin(t, pollTimeout, testenv.EventuallyInterval, "the policy holding the doorman to its annotations", func() error {
		try++
		if err := patchMW(t, doorman, "probe", fmt.Sprintf(`{"metadata":{"annotations":{"example.com/try-%d":"y"}}}`, try)); err == nil {
			return fmt.Errorf("the doorman set another annotation")
		}
		return nil
	})

	wantAllowed(t, patchMW(t, doorman, "api", `{"metadata":{"annotations":{"napwake.dev/last-request":"2026-10-23T18:05:00Z","napwake.dev/last-request-from":"10.244.1.7"}}}`),
		"the doorman records a wake")
	wantAllowed(t, patchMW(t, doorman, "api", `{"metadata":{"annotations":{"napwake.dev/turned-away":"2026-10-23T18:04:12Z/3"}}}`),
		"the doorman counts what it turned away")
	wantAllowed(t, patchMW(t, doorman, "api", `{"metadata":{"annotations":{"napwake.dev/last-activity":"2026-10-23T18:06:00.5Z"}}}`),
		"the doorman records connections it passes through as activity")
	wantDenied(t, patchMW(t, doorman, "api", `{"metadata":{"annotations":{"napwake.dev/wake-requested":"2026-10-23T18:05:00Z"}}}`),
		"the doorman sets wake-requested", onlyWakeAnns)
	wantDenied(t, patchMW(t, doorman, "api", `{"spec":{"idleAfter":"1m"}}`),
		"the doorman changes the spec", "may not change a ManagedWorkload's spec")
	wantDenied(t, patchMW(t, doorman, "api", `{"metadata":{"labels":{"napwake.dev/ignore":"true"}}}`),
		"the doorman labels it", "may not change a ManagedWorkload's labels, finalizers or owner references")
	wantDenied(t, patchMW(t, doorman, "api", `{"metadata":{"finalizers":["example.com/hold"]}}`),
		"the doorman adds a finalizer", "may not change a ManagedWorkload's labels, finalizers or owner references")
	wantDenied(t, patchMW(t, doorman, "api", `{"status":{"phase":"Resuming"}}`, "status"),
		"the doorman writes status", "forbidden")
	err := doorman.dyn.Resource(mwGVR).Namespace(appNS).Delete(ctx, "api", metav1.DeleteOptions{})
	wantDenied(t, err, "the doorman deletes a ManagedWorkload", "forbidden")

	// turned-away is copied into status.turnedAway: a forged count would
	// be reported as the doorman's.
	for _, ann := range []string{"napwake.dev/last-request", "napwake.dev/last-request-from", "napwake.dev/turned-away"} {
		wantDenied(t, patchMW(t, other, "api", fmt.Sprintf(`{"metadata":{"annotations":{%q:"2026-10-23T18:04:12Z/9999"}}}`, ann)),
			"another ServiceAccount changes "+ann, onlyDoorman)
		wantDenied(t, patchMW(t, admin, "api", fmt.Sprintf(`{"metadata":{"annotations":{%q:"2026-10-23T18:04:12Z/9999"}}}`, ann)),
			"the cluster admin changes "+ann, onlyDoorman)
	}
	wantDenied(t, patchMW(t, other, "probe", `{"metadata":{"annotations":{"napwake.dev/turned-away":"2026-10-23T18:04:12Z/9999"}}}`),
		"another ServiceAccount adds turned-away", onlyDoorman)
	wantAllowed(t, patchMW(t, doorman, "probe", `{"metadata":{"annotations":{"napwake.dev/turned-away":"2026-10-23T18:04:12Z/1"}}}`),
		"the doorman adds turned-away")
	wantAllowed(t, patchMW(t, other, "probe", `{"metadata":{"annotations":{"napwake.dev/turned-away":null}}}`),
		"another ServiceAccount removes turned-away")
	// The status subresource is no way round: only the operator may change
	// status (status.doorman claims ports), and the API server keeps only
	// the status of what is sent there.
	testenv.EventuallyWithin(t, pollTimeout, testenv.EventuallyInterval, "the policy refusing others' status writes", func() error {
		try++
		if err := patchMW(t, other, "probe", fmt.Sprintf(`{"status":{"lastActivitySource":"try-%d"}}`, try), "status"); err == nil {
			return fmt.Errorf("another ServiceAccount wrote status")
		}
		return nil
	})
	wantDenied(t, patchMW(t, other, "api", `{"metadata":{"annotations":{"napwake.dev/last-request-from":"10.9.9.9"}},"status":{"phase":"Running"}}`, "status"),
		"another ServiceAccount writes status", onlyOperator)
	wantDenied(t, patchMW(t, other, "api", `{"status":{"doorman":{"routes":[{"service":"api","port":80,"doormanPort":20001}]}}}`, "status"),
		"another ServiceAccount claims a doorman port", onlyOperator)
	wantDenied(t, patchMW(t, admin, "api", `{"status":{"phase":"Paused"}}`, "status"),
		"the cluster admin writes status", onlyOperator)
	wantAllowed(t, patchMW(t, other, "api", `{"metadata":{"annotations":{"napwake.dev/last-request-from":"10.9.9.9"}}}`, "status"),
		"another ServiceAccount sends status unchanged")
	if mw, err := admin.dyn.Resource(mwGVR).Namespace(appNS).Get(ctx, "api", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if got := mw.GetAnnotations()["napwake.dev/last-request-from"]; got != "10.244.1.7" {
		t.Errorf("last-request-from %q after another's status write, want the doorman's 10.244.1.7", got)
	}
	wantAllowed(t, patchMW(t, other, "api", `{"metadata":{"annotations":{"napwake.dev/last-activity":"2026-10-23T18:06:00Z"}}}`),
		"another ServiceAccount records activity")
	wantAllowed(t, patchMW(t, other, "api", `{"metadata":{"annotations":{"napwake.dev/wake-requested":"2026-10-23T18:06:00Z"}}}`),
		"another ServiceAccount asks for a wake")
	created := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "napwake.dev/v1alpha1", "kind": "ManagedWorkload",
		"metadata": map[string]any{"name": "web", "namespace": appNS, "annotations": map[string]any{"napwake.dev/last-request": "2026-10-23T18:05:00Z"}},
		"spec":     map[string]any{"targetRef": map[string]any{"kind": "Deployment", "name": "web"}},
	}}
	_, err = other.dyn.Resource(mwGVR).Namespace(appNS).Create(ctx, created, metav1.CreateOptions{})
	wantDenied(t, err, "another ServiceAccount creates a ManagedWorkload with last-request", onlyDoorman)
	created.SetAnnotations(map[string]string{"napwake.dev/turned-away": "2026-10-23T18:04:12Z/9999"})
	_, err = other.dyn.Resource(mwGVR).Namespace(appNS).Create(ctx, created, metav1.CreateOptions{})
	wantDenied(t, err, "another ServiceAccount creates a ManagedWorkload with turned-away", onlyDoorman)

	// The operator keeps working on a ManagedWorkload the doorman has
	// annotated: finalizers, its own annotations, status, a whole update.
	wantAllowed(t, patchMW(t, operator, "api", `{"metadata":{"finalizers":["napwake.dev/finalizer"]}}`), "the operator adds its finalizer")
	wantAllowed(t, patchMW(t, operator, "api", `{"metadata":{"annotations":{"napwake.dev/wake-requested":null}}}`), "the operator clears wake-requested")
	wantAllowed(t, patchMW(t, operator, "api", `{"status":{"phase":"Resuming"}}`, "status"), "the operator writes status")
	mw, err := operator.dyn.Resource(mwGVR).Namespace(appNS).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := mw.GetAnnotations()["napwake.dev/last-request-from"]; got != "10.244.1.7" {
		t.Errorf("last-request-from %q, want the doorman's 10.244.1.7", got)
	}
	if got := mw.GetAnnotations()["napwake.dev/turned-away"]; got != "2026-10-23T18:04:12Z/3" {
		t.Errorf("turned-away %q, want the doorman's 2026-10-23T18:04:12Z/3", got)
	}
	mw.SetFinalizers(nil)
	_, err = operator.dyn.Resource(mwGVR).Namespace(appNS).Update(ctx, mw, metav1.UpdateOptions{})
	wantAllowed(t, err, "the operator updates the whole object, last-request and turned-away unchanged")
	wantDenied(t, patchMW(t, operator, "api", `{"metadata":{"annotations":{"napwake.dev/turned-away":"2026-10-23T18:04:12Z/9999"}}}`),
		"the operator changes turned-away", onlyDoorman)
	wantDenied(t, patchMW(t, operator, "api", `{"metadata":{"annotations":{"napwake.dev/last-request":"2027-01-01T00:00:00Z"}}}`),
		"the operator changes last-request", onlyDoorman)
}

// grantAll lets user do anything with ManagedWorkloads in ns.
func grantAll(t *testing.T, ns, user string) {
	t.Helper()
	admin := clientsAs(t, "")
	for _, u := range []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
			"metadata": map[string]any{"name": "mw-all", "namespace": ns},
			"rules":    []any{map[string]any{"apiGroups": []any{"napwake.dev"}, "resources": []any{"managedworkloads", "managedworkloads/status"}, "verbs": []any{"*"}}}}},
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"metadata": map[string]any{"name": "mw-all", "namespace": ns},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "mw-all"},
			"subjects": []any{map[string]any{"kind": "User", "name": user}}}},
	} {
		if err := admin.apply(context.Background(), u, false); err != nil {
			t.Fatal(err)
		}
	}
}
