package config

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsMatchTheContract(t *testing.T) {
	c := Default(env(nil))
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"metrics-bind-address": ":8080", "health-probe-bind-address": ":8081", "leader-elect": "true",
		"leader-election-namespace": "napwake-system", "default-idle-after": "30m0s", "default-wake": "request",
		"doorman-service": "napwake-system/napwake-doorman-pods", "ports-per-workload": "32", "ports-per-namespace": "256",
		"prometheus-url": "", "neg-forwarder": "false", "forwarder-image": "", "forwarder-replicas": "2", "forwarder-doorman-host": "",
		"per-workload-metrics": "true",
	}
	for name, v := range want {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flag --%s is missing", name)
			continue
		}
		if f.DefValue != v {
			t.Errorf("--%s defaults to %q, want %q", name, f.DefValue, v)
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestLeaderElectionNamespaceComesFromPodNamespace(t *testing.T) {
	if got := Default(env(map[string]string{"POD_NAMESPACE": "ops"})).LeaderElectionNamespace; got != "ops" {
		t.Errorf("got %q, want ops", got)
	}
}

func TestValidateRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"an idle time under a minute", func(c *Config) { c.DefaultIdleAfter = 30 * time.Second }, "--default-idle-after"},
		{"an idle time over a week", func(c *Config) { c.DefaultIdleAfter = 169 * time.Hour }, "--default-idle-after"},
		{"a wake setting other than request or ask", func(c *Config) { c.DefaultWake = "Ask" }, "--default-wake"},
		{"a doorman Service without a namespace", func(c *Config) { c.DoormanService = "doorman" }, "--doorman-service"},
		{"no ports per workload", func(c *Config) { c.PortsPerWorkload = 0 }, "--ports-per-workload"},
		{"fewer ports per namespace than per workload", func(c *Config) { c.PortsPerNamespace = 8 }, "--ports-per-namespace"},
		{"a sync period under a second", func(c *Config) { c.SyncPeriod = time.Millisecond }, "--sync-period"},
		{"a Prometheus URL without a scheme", func(c *Config) { c.PrometheusURL = "prometheus.monitoring:9090" }, "--prometheus-url"},
		{"a Prometheus URL with a query", func(c *Config) { c.PrometheusURL = "http://prometheus:9090/?x=1" }, "--prometheus-url"},
		{"the NEG forwarder without its image", func(c *Config) { c.NEGForwarder = true }, "--neg-forwarder needs --forwarder-image"},
		{"no forwarder pods", func(c *Config) { c.ForwarderReplicas = 0 }, "--forwarder-replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default(env(nil))
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestTheForwarderImageIsPassedOnlyWithTheForwarderOn(t *testing.T) {
	c := Default(env(nil))
	c.ForwarderImage = "registry.example/napwake-forwarder:v0.1.0"
	if got := c.ForwarderImageIfOn(); got != "" {
		t.Errorf("with --neg-forwarder=false: %q, want \"\" (off)", got)
	}
	c.NEGForwarder = true
	if got := c.ForwarderImageIfOn(); got != c.ForwarderImage || c.Validate() != nil {
		t.Errorf("with --neg-forwarder: %q, %v; want the image, valid", got, c.Validate())
	}
}

func TestAnEmptyDoormanServiceDisablesRouting(t *testing.T) {
	c := Default(env(nil))
	c.DoormanService = ""
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.DoormanServiceKey(); ok {
		t.Error("routing is on with --doorman-service=\"\"")
	}
}

func TestAPrometheusURLIsAccepted(t *testing.T) {
	for _, u := range []string{"http://prometheus.monitoring:9090", "https://thanos.example/prometheus/"} {
		c := Default(env(nil))
		c.PrometheusURL = u
		if err := c.Validate(); err != nil {
			t.Errorf("--prometheus-url %q: %v", u, err)
		}
	}
}
