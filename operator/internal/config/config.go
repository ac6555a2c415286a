// Package config holds the operator's command-line configuration: one struct
// with a default on every field, the flags that fill it (names fixed by the
// lead's contracts), and Validate.
//
// It must not read the cluster: flags and their validation only.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"
	"k8s.io/apimachinery/pkg/runtime/schema"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
	"napwake.dev/operator/internal/workload"
)

// Config is everything the operator is told at start.
type Config struct {
	// MetricsBindAddress serves Prometheus /metrics; "0" turns it off. Default ":8080".
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz. Default ":8081".
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's /debug/pprof/ profiles; "" (the
	// default) or "0" turns it off. For finding where memory goes (make
	// soak turns it on); keep it off where the pod's port is reachable.
	PprofBindAddress string
	// LeaderElect makes only one replica act at a time. Default true.
	LeaderElect bool
	// LeaderElectionNamespace holds the Lease. Default: $POD_NAMESPACE, else "napwake-system".
	LeaderElectionNamespace string
	// DefaultIdleAfter is the idle time before a pause when neither the
	// ManagedWorkload nor an annotation says. Default 30m.
	DefaultIdleAfter time.Duration
	// DefaultWake is "request" or "ask", for labelled workloads whose
	// annotations don't say. Default "request".
	DefaultWake string
	// DoormanService is namespace/name of the headless Service selecting the
	// doorman pods; "" turns routing off. Default "napwake-system/napwake-doorman-pods".
	DoormanService string
	// PortsPerWorkload caps the doorman ports one workload takes. Default 32.
	PortsPerWorkload int
	// PortsPerNamespace caps the doorman ports one namespace takes. Default 256.
	PortsPerNamespace int
	// PrometheusURL is where spec.activity.prometheus queries go; "" turns them off.
	PrometheusURL string
	// PrometheusHTTPConfig is a file in Prometheus's own http_config format
	// (TLS, bearer token or basic auth from files, headers such as
	// X-Scope-OrgID, proxy) for those queries; "" sends them with none.
	PrometheusHTTPConfig string
	// SyncPeriod is how often every ManagedWorkload is looked at again even
	// when nothing changed (idle clocks, usage signal). Default 1m.
	SyncPeriod time.Duration
	// NEGForwarder runs the NEG forwarder beside paused workloads whose
	// Services are in GKE NEGs. Default false.
	NEGForwarder bool
	// ForwarderImage is the forwarder's image, tagged with forwarder/VERSION;
	// required with NEGForwarder.
	ForwarderImage string
	// ForwarderReplicas is how many forwarder pods run per workload. Default 2.
	ForwarderReplicas int
	// ForwarderDoormanHost is where forwarders find the doorman; "" means
	// the doorman Service's DNS name, <name>.<namespace>.svc.
	ForwarderDoormanHost string
	// KEDA holds the KEDA ScaledObjects that scale a paused workload at 0
	// (autoscaling.keda.sh/paused-replicas). Default false: it needs RBAC
	// on scaledobjects.keda.sh, which the chart grants only then.
	KEDA bool
	// SuspendCronJobs suspends the CronJobs of a namespace labelled
	// napwake.dev/enabled=true while every workload there is paused.
	// Default false: a CronJob may do work that is not for the workloads
	// (a backup, a report), so suspending it is for the user to choose.
	SuspendCronJobs bool
	// PerWorkloadMetrics exports the napwake_operator_workload_* series,
	// labelled with each ManagedWorkload's namespace and name. Default
	// true: their number is bounded by the ManagedWorkloads; turn them
	// off where a Prometheus cannot afford about eight series per workload.
	PerWorkloadMetrics bool
	// TargetKinds lists, comma-separated as group/version/Kind, the kinds
	// beyond apps/v1 Deployment and StatefulSet the operator may pause
	// through their scale subresource (docs/pause.md#other-kinds-of-workload).
	// Default empty: each needs RBAC on its resource and its scale, which
	// the chart grants only for the kinds its operator.targetKinds lists.
	TargetKinds string
}

// Default returns the configuration with every default filled in; getenv
// supplies POD_NAMESPACE (os.Getenv in main).
func Default(getenv func(string) string) Config {
	ns := getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "napwake-system"
	}
	return Config{
		MetricsBindAddress:      ":8080",
		HealthProbeBindAddress:  ":8081",
		LeaderElect:             true,
		LeaderElectionNamespace: ns,
		DefaultIdleAfter:        30 * time.Minute,
		DefaultWake:             napwakev1alpha1.WakeValueRequest,
		DoormanService:          "napwake-system/napwake-doorman-pods",
		PortsPerWorkload:        napwakev1alpha1.DefaultPortsPerWorkload,
		PortsPerNamespace:       napwakev1alpha1.DefaultPortsPerNamespace,
		SyncPeriod:              time.Minute,
		ForwarderReplicas:       2,
		PerWorkloadMetrics:      true,
	}
}

// BindFlags registers every flag on fs, with c's current values as defaults.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.MetricsBindAddress, "metrics-bind-address", c.MetricsBindAddress, `address of the Prometheus /metrics endpoint; "0" turns it off`)
	fs.StringVar(&c.HealthProbeBindAddress, "health-probe-bind-address", c.HealthProbeBindAddress, "address of /healthz and /readyz")
	fs.StringVar(&c.PprofBindAddress, "pprof-bind-address", c.PprofBindAddress, `address of Go's /debug/pprof/ profiles; "" or "0" turns them off (the default)`)
	fs.BoolVar(&c.LeaderElect, "leader-elect", c.LeaderElect, "elect a leader so only one replica acts")
	fs.StringVar(&c.LeaderElectionNamespace, "leader-election-namespace", c.LeaderElectionNamespace, "namespace of the leader election Lease (default: $POD_NAMESPACE, else napwake-system)")
	fs.DurationVar(&c.DefaultIdleAfter, "default-idle-after", c.DefaultIdleAfter, "idle time before a pause when nothing else says (1m..168h)")
	fs.StringVar(&c.DefaultWake, "default-wake", c.DefaultWake, `wake setting of labelled workloads whose annotations don't say: "request" or "ask"`)
	fs.StringVar(&c.DoormanService, "doorman-service", c.DoormanService, `namespace/name of the headless Service selecting the doorman pods; "" disables routing`)
	fs.IntVar(&c.PortsPerWorkload, "ports-per-workload", c.PortsPerWorkload, "most doorman ports one workload takes")
	fs.IntVar(&c.PortsPerNamespace, "ports-per-namespace", c.PortsPerNamespace, "most doorman ports one namespace takes")
	fs.StringVar(&c.PrometheusURL, "prometheus-url", c.PrometheusURL, `Prometheus base URL for spec.activity.prometheus queries; "" turns them off`)
	fs.StringVar(&c.PrometheusHTTPConfig, "prometheus-http-config", c.PrometheusHTTPConfig, `YAML file in Prometheus's http_config format (tls_config, authorization, basic_auth, http_headers, proxy_url...) for the --prometheus-url queries; "" sends them without credentials`)
	fs.DurationVar(&c.SyncPeriod, "sync-period", c.SyncPeriod, "how often every ManagedWorkload is re-checked when nothing changed")
	fs.BoolVar(&c.NEGForwarder, "neg-forwarder", c.NEGForwarder, "run the NEG forwarder beside paused workloads whose Services are in GKE network endpoint groups")
	fs.StringVar(&c.ForwarderImage, "forwarder-image", c.ForwarderImage, "the NEG forwarder's image (napwake-forwarder, tagged with its version); required with --neg-forwarder")
	fs.IntVar(&c.ForwarderReplicas, "forwarder-replicas", c.ForwarderReplicas, "NEG forwarder pods per paused workload")
	fs.BoolVar(&c.KEDA, "keda", c.KEDA, "hold the KEDA ScaledObjects that scale a paused workload at 0 replicas; nothing happens while KEDA's CRD is not installed")
	fs.BoolVar(&c.SuspendCronJobs, "suspend-cronjobs", c.SuspendCronJobs, "suspend the CronJobs of a namespace labelled napwake.dev/enabled=true while every workload there is paused")
	fs.BoolVar(&c.PerWorkloadMetrics, "per-workload-metrics", c.PerWorkloadMetrics, "export napwake_operator_workload_* series labelled with each ManagedWorkload's namespace and name (about eight per workload)")
	fs.StringVar(&c.TargetKinds, "target-kinds", c.TargetKinds, `comma-separated group/version/Kind (e.g. argoproj.io/v1alpha1/Rollout) of kinds with a scale subresource to pause besides Deployments and StatefulSets; each needs RBAC on its resource and its scale`)
	fs.StringVar(&c.ForwarderDoormanHost, "forwarder-doorman-host", c.ForwarderDoormanHost, `where NEG forwarders find the doorman; "" means the --doorman-service's DNS name, <name>.<namespace>.svc`)
}

// Validate reports every flag value the operator cannot run with.
func (c Config) Validate() error {
	var errs []error
	if c.DefaultIdleAfter < napwakev1alpha1.MinIdleAfter || c.DefaultIdleAfter > napwakev1alpha1.MaxIdleAfter {
		errs = append(errs, fmt.Errorf("--default-idle-after %s: want 1m to 168h", c.DefaultIdleAfter))
	}
	if c.DefaultWake != napwakev1alpha1.WakeValueRequest && c.DefaultWake != napwakev1alpha1.WakeValueAsk {
		errs = append(errs, fmt.Errorf("--default-wake %q: want %q or %q", c.DefaultWake, napwakev1alpha1.WakeValueRequest, napwakev1alpha1.WakeValueAsk))
	}
	if c.DoormanService != "" {
		if ns, name, ok := strings.Cut(c.DoormanService, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			errs = append(errs, fmt.Errorf("--doorman-service %q: want namespace/name, or \"\" to disable routing", c.DoormanService))
		}
	}
	if c.PortsPerWorkload < 1 || c.PortsPerWorkload > napwakev1alpha1.DoormanPortMax-napwakev1alpha1.DoormanPortMin+1 {
		errs = append(errs, fmt.Errorf("--ports-per-workload %d: want 1 to 10000", c.PortsPerWorkload))
	}
	if c.PortsPerNamespace < c.PortsPerWorkload || c.PortsPerNamespace > napwakev1alpha1.DoormanPortMax-napwakev1alpha1.DoormanPortMin+1 {
		errs = append(errs, fmt.Errorf("--ports-per-namespace %d: want --ports-per-workload (%d) to 10000", c.PortsPerNamespace, c.PortsPerWorkload))
	}
	if c.PrometheusURL != "" {
		if u, err := url.Parse(c.PrometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			errs = append(errs, fmt.Errorf("--prometheus-url %q: want an http or https base URL such as http://prometheus.monitoring:9090, or \"\" to turn the queries off", c.PrometheusURL))
		}
	}
	if c.PrometheusHTTPConfig != "" {
		if c.PrometheusURL == "" {
			errs = append(errs, errors.New("--prometheus-http-config needs --prometheus-url"))
		}
		if _, err := c.PrometheusHTTPClientConfig(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.LeaderElect && c.LeaderElectionNamespace == "" {
		errs = append(errs, errors.New("--leader-election-namespace is empty"))
	}
	if c.NEGForwarder && strings.TrimSpace(c.ForwarderImage) == "" {
		errs = append(errs, errors.New("--neg-forwarder needs --forwarder-image"))
	}
	if c.ForwarderReplicas < 1 || c.ForwarderReplicas > 10 {
		errs = append(errs, fmt.Errorf("--forwarder-replicas %d: want 1 to 10", c.ForwarderReplicas))
	}
	if _, err := workload.ParseKinds(c.TargetKinds); err != nil {
		errs = append(errs, err)
	}
	if c.SyncPeriod < time.Second {
		errs = append(errs, fmt.Errorf("--sync-period %s: want at least 1s", c.SyncPeriod))
	}
	return errors.Join(errs...)
}

// PrometheusHTTPClientConfig reads --prometheus-http-config strictly, as
// Prometheus reads a scrape config's HTTP settings: an unknown or
// misspelled key is an error naming it, and relative file names are under
// the file's directory. It is nil, with no error, when the flag is empty.
func (c Config) PrometheusHTTPClientConfig() (*promconfig.HTTPClientConfig, error) {
	if c.PrometheusHTTPConfig == "" {
		return nil, nil
	}
	hc, _, err := promconfig.LoadHTTPConfigFile(c.PrometheusHTTPConfig)
	if err == nil {
		err = hc.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("--prometheus-http-config %s: %w", c.PrometheusHTTPConfig, err)
	}
	return hc, nil
}

// ParsedTargetKinds is --target-kinds read (Validate reports what cannot be).
func (c Config) ParsedTargetKinds() []schema.GroupVersionKind {
	kinds, _ := workload.ParseKinds(c.TargetKinds)
	return kinds
}

// ForwarderImageIfOn is the forwarder image when the NEG forwarder is on,
// else "" (off).
func (c Config) ForwarderImageIfOn() string {
	if !c.NEGForwarder {
		return ""
	}
	return c.ForwarderImage
}

// DoormanServiceKey splits DoormanService into namespace and name; ok is
// false when routing is off.
func (c Config) DoormanServiceKey() (namespace, name string, ok bool) {
	namespace, name, ok = strings.Cut(c.DoormanService, "/")
	return namespace, name, ok && c.DoormanService != ""
}
