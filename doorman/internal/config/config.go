// Package config holds the doorman's flags
// (docs/helm-values.md#operator-and-doorman-flags)
// and the downward-API environment, with defaults and validation.
//
// It must not read the cluster: flags, the downward API and their validation
// only.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"napwake.dev/shared/logging"
)

// The bounds of --pass-socket-buffer: below 4 KiB a connection crawls;
// above 64 MiB one caller could pin a doorman's memory.
const (
	minSocketBuffer = 4 << 10
	maxSocketBuffer = 64 << 20
)

// Config is everything the doorman is told at start.
type Config struct {
	// MetricsBindAddress serves Prometheus /metrics over plain HTTP (":8443").
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz (":8081").
	HealthProbeBindAddress string
	// HealthCheckUserAgents are extra probe prefixes (doorman.healthCheckUserAgents), comma-separated.
	HealthCheckUserAgents string
	// ListenAddress is the address doorman ports listen on ("" = all).
	ListenAddress string
	// PassSocketBuffer caps the kernel socket buffers of a passed-through
	// connection, each way, in bytes (524288); 0 leaves them to the
	// kernel's autotuning.
	PassSocketBuffer int
	// Copy is how passed-through connections are copied: "splice", the
	// fast path, or "plain", io.Copy through a Go buffer, for a kernel or
	// sandbox where the fast path misbehaves.
	Copy string
	// WakeKeySecret names the Secret, in the doorman's namespace, that holds
	// the key Wake it buttons are signed with (wake.mode Ask); "" signs
	// nothing, so no click wakes.
	WakeKeySecret string
	// Version prints the version and exits.
	Version bool
	// Logging are --log-format and --log-level.
	Logging logging.Options

	// PodName, PodNamespace and PodIPs come from the downward API.
	PodName, PodNamespace string
	PodIPs                []netip.Addr
}

// BindFlags registers the doorman's flags on fs with their defaults.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.MetricsBindAddress, "metrics-bind-address", ":8443", "address serving Prometheus /metrics over plain HTTP")
	fs.StringVar(&c.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address serving /healthz and /readyz")
	fs.StringVar(&c.HealthCheckUserAgents, "health-check-user-agents", "", "comma-separated User-Agent prefixes of your own health checkers, answered 503 without waking")
	fs.StringVar(&c.ListenAddress, "listen-address", "", `address doorman ports listen on; "" is all`)
	fs.IntVar(&c.PassSocketBuffer, "pass-socket-buffer", 512<<10, "bytes each kernel socket buffer of a passed-through connection may hold, each way; 0 leaves them to the kernel's autotuning")
	fs.StringVar(&c.Copy, "copy", "splice", "how passed-through connections are copied: splice (the fast path) or plain (io.Copy through a Go buffer, for a kernel or sandbox where splice or TCP_INQ misbehave)")
	fs.StringVar(&c.WakeKeySecret, "wake-key-secret", "", "the Secret in the doorman's namespace holding the key Wake it buttons are signed with; the doorman fills it when empty")
	fs.BoolVar(&c.Version, "version", false, "print the version and exit")
	c.Logging.BindFlags(fs)
}

// LoadEnv reads POD_NAME, POD_NAMESPACE and POD_IPS (else POD_IP). With
// neither holding an address it refuses, naming POD_IPS: the dial rules
// keep the doorman from dialling itself by these addresses, and without
// them a Service whose endpoints lead back to the doorman would loop
// through it.
func (c *Config) LoadEnv(getenv func(string) string) error {
	c.PodName, c.PodNamespace = getenv("POD_NAME"), getenv("POD_NAMESPACE")
	ips := getenv("POD_IPS")
	if ips == "" {
		ips = getenv("POD_IP")
	}
	c.PodIPs = nil
	for _, s := range strings.Split(ips, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("reading POD_IPS %q: %w", ips, err)
		}
		c.PodIPs = append(c.PodIPs, a)
	}
	if len(c.PodIPs) == 0 {
		return fmt.Errorf("POD_IPS is empty (and POD_IP with it): the doorman needs its own addresses, so it never dials itself; set POD_IPS from the downward API's status.podIPs, as the chart does")
	}
	return nil
}

// Agents returns the extra User-Agent prefixes, trimmed, empties dropped.
func (c *Config) Agents() []string {
	var out []string
	for _, s := range strings.Split(c.HealthCheckUserAgents, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Validate reports every flag value that cannot work.
func (c *Config) Validate() error {
	var errs []error
	for name, a := range map[string]string{"--metrics-bind-address": c.MetricsBindAddress, "--health-probe-bind-address": c.HealthProbeBindAddress} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want host:port: %w", name, a, err))
		}
	}
	if c.ListenAddress != "" {
		if _, err := netip.ParseAddr(c.ListenAddress); err != nil {
			errs = append(errs, fmt.Errorf("--listen-address %q: want an IP address or empty: %w", c.ListenAddress, err))
		}
	}
	for _, a := range c.Agents() {
		if len(a) < 3 {
			errs = append(errs, fmt.Errorf("--health-check-user-agents: prefix %q is too short: it would match nearly every caller", a))
		}
	}
	if b := c.PassSocketBuffer; b != 0 && (b < minSocketBuffer || b > maxSocketBuffer) {
		errs = append(errs, fmt.Errorf("--pass-socket-buffer %d: want 0 (the kernel's autotuning) or %d to %d bytes", b, minSocketBuffer, maxSocketBuffer))
	}
	if c.Copy != "splice" && c.Copy != "plain" {
		errs = append(errs, fmt.Errorf("--copy %q: want splice or plain", c.Copy))
	}
	if c.WakeKeySecret != "" && c.PodNamespace == "" {
		errs = append(errs, fmt.Errorf("--wake-key-secret %q: the Secret is read in the doorman's namespace, and POD_NAMESPACE is not set", c.WakeKeySecret))
	}
	if err := c.Logging.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
