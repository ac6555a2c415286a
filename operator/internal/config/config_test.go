package config

import (
	"flag"
	"os"
	"path/filepath"
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
		"prometheus-url": "", "prometheus-http-config": "", "neg-forwarder": "false", "forwarder-image": "", "forwarder-replicas": "2", "forwarder-doorman-host": "",
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
		{"a target kind without its group/version", func(c *Config) { c.TargetKinds = "Rollout" }, "--target-kinds"},
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

// --prometheus-http-config is read as Prometheus reads http_config, strictly:
// what it cannot use stops the operator at start, naming the flag, the
// file and what is wrong.
func TestThePrometheusHTTPConfigIsReadStrictly(t *testing.T) {
	for _, tc := range []struct {
		name, url, file string
		want            []string // all in the error; none for no error
	}{
		{"a tenant, a token file and a CA", "https://mimir.example/prometheus",
			"http_headers:\n  X-Scope-OrgID:\n    values: [team-a]\nauthorization:\n  credentials_file: /etc/napwake/prometheus/token\ntls_config:\n  ca_file: /etc/napwake/prometheus/ca.crt\n", nil},
		{"basic auth with a password file", "http://prometheus:9090", "basic_auth:\n  username: napwake\n  password_file: password\n", nil},
		{"a misspelled key", "http://prometheus:9090", "bearer_tokn_file: /etc/napwake/prometheus/token\n", []string{"--prometheus-http-config", "http.yaml", "bearer_tokn_file"}},
		{"a misspelled nested key", "http://prometheus:9090", "tls_config:\n  ca_fil: ca.crt\n", []string{"--prometheus-http-config", "http.yaml", "ca_fil"}},
		{"two credentials (Validate)", "http://prometheus:9090", "bearer_token_file: token\nbasic_auth:\n  username: napwake\n", []string{"--prometheus-http-config", "at most one of basic_auth"}},
		{"not YAML", "http://prometheus:9090", "tls_config: [\n", []string{"--prometheus-http-config", "http.yaml"}},
		{"without --prometheus-url", "", "follow_redirects: false\n", []string{"--prometheus-http-config needs --prometheus-url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "http.yaml")
			if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			c := Default(env(nil))
			c.PrometheusURL, c.PrometheusHTTPConfig = tc.url, file
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, w := range append(tc.want, file) {
				if tc.url == "" && w == file {
					continue
				}
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want an error with %q", err, w)
				}
			}
		})
	}
}

func TestAMissingPrometheusHTTPConfigIsReported(t *testing.T) {
	c := Default(env(nil))
	c.PrometheusURL, c.PrometheusHTTPConfig = "http://prometheus:9090", filepath.Join(t.TempDir(), "missing.yaml")
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--prometheus-http-config") || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("Validate() = %v, want an error naming the flag and the file", err)
	}
	if hc, err := Default(env(nil)).PrometheusHTTPClientConfig(); hc != nil || err != nil {
		t.Fatalf("with no flag: %v, %v; want nil, nil", hc, err)
	}
}
