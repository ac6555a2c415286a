package cli

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/shared/restore"
)

// scheme knows the kinds the plugin reads: ManagedWorkloads, Events, Pods,
// and Deployments and StatefulSets (their requests, for savings); restore
// also scales (autoscaling/v1 Scale), removes EndpointSlices, and resumes
// the CronJobs and KEDA ScaledObjects Napwake held.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		napwakev1alpha1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme, autoscalingv1.AddToScheme, discoveryv1.AddToScheme, batchv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // a programming error: the types cannot register
		}
	}
	return s
}()

// restMapper maps the plugin's few kinds statically, so no command needs
// discovery (which logs noisily and costs round trips); whether the CRD is
// installed is asked only when an answer needs explaining. Any other kind
// (a ManagedWorkload's target of another kind, which restore scales back:
// docs/pause.md#other-kinds-of-workload) is looked up through discovery,
// lazily, only when asked for.
func restMapper(cfg *rest.Config) (meta.RESTMapper, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	discovered, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, err
	}
	return meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{staticRESTMapper(), discovered}}, nil
}

// staticRESTMapper maps the kinds the plugin always reads.
func staticRESTMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(napwakev1alpha1.GroupVersion.WithKind("ManagedWorkload"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Event"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot) // -n completion
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	m.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	m.Add(appsv1.SchemeGroupVersion.WithKind("StatefulSet"), meta.RESTScopeNamespace)
	m.Add(discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), meta.RESTScopeNamespace)
	m.Add(batchv1.SchemeGroupVersion.WithKind("CronJob"), meta.RESTScopeNamespace)
	m.Add(autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), meta.RESTScopeNamespace) // describe's autoscalers
	m.Add(restore.ScaledObjectGVK, meta.RESTScopeNamespace)                                              // 404 where KEDA is not installed: nothing held

	return m
}

// session is one command's connection to the cluster.
type session struct {
	cfg *rest.Config
	// namespace is -n, else the kubeconfig context's, else "default".
	namespace string
	c         client.WithWatch
	// clock is the API server's time, from its answers.
	clock *serverClock
	// skewNoted is set once the clocks' difference was mentioned, so
	// acting on several workloads says it once.
	skewNoted bool
}

// connect builds a client from the kubeconfig flags.
func (o *Options) connect() (*session, error) {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, explainConfig(err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultRequestTimeout
	}
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, explainConfig(err)
	}
	sc := &serverClock{}
	cfg.Wrap(sc.wrap)
	mapper, err := restMapper(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
	}
	return &session{cfg: cfg, namespace: ns, c: c, clock: sc}, nil
}

// withTimeout returns a copy of cfg whose requests give up after d.
func withTimeout(cfg *rest.Config, d time.Duration) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = d
	return c
}
