package config

import (
	"flag"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func parse(t *testing.T, args ...string) *Config {
	t.Helper()
	c := &Config{}
	fs := flag.NewFlagSet("doorman", flag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDefaultsAreTheContractsAndValid(t *testing.T) {
	c := parse(t)
	if c.MetricsBindAddress != ":8443" || c.HealthProbeBindAddress != ":8081" || c.ListenAddress != "" ||
		c.PassSocketBuffer != 512<<10 {
		t.Fatalf("defaults %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestUserAgentsAreSplitAndTrimmed(t *testing.T) {
	c := parse(t, "--health-check-user-agents", " MyCorpMonitor/ , status-checker,,")
	if got := c.Agents(); !slices.Equal(got, []string{"MyCorpMonitor/", "status-checker"}) {
		t.Fatalf("agents %q", got)
	}
}

func TestBadValuesAreRefusedClearly(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-bind-address", "8443"}, "--metrics-bind-address"},
		{[]string{"--listen-address", "localhost"}, "--listen-address"},
		{[]string{"--health-check-user-agents", "M"}, "too short"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--pass-socket-buffer", "4095"}, "--pass-socket-buffer 4095"},
		{[]string{"--pass-socket-buffer", "67108865"}, "--pass-socket-buffer 67108865"},
		{[]string{"--pass-socket-buffer", "-1"}, "--pass-socket-buffer -1"},
		{[]string{"--copy", "io"}, `--copy "io"`},
	} {
		err := parse(t, tc.args...).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

func TestPassSocketBufferBounds(t *testing.T) {
	for _, v := range []string{"0", "4096", "67108864"} {
		if err := parse(t, "--pass-socket-buffer", v).Validate(); err != nil {
			t.Errorf("--pass-socket-buffer %s: %v", v, err)
		}
	}
}

func TestPodIPsFromTheDownwardAPI(t *testing.T) {
	c := &Config{}
	env := map[string]string{"POD_IPS": "10.0.0.7,fd00::7", "POD_IP": "10.9.9.9"}
	if err := c.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if len(c.PodIPs) != 2 || c.PodIPs[1] != netip.MustParseAddr("fd00::7") {
		t.Fatalf("POD_IPS: %v", c.PodIPs)
	}
	env = map[string]string{"POD_IP": "10.9.9.9"}
	_ = c.LoadEnv(func(k string) string { return env[k] })
	if len(c.PodIPs) != 1 || c.PodIPs[0] != netip.MustParseAddr("10.9.9.9") {
		t.Fatalf("POD_IP fallback: %v", c.PodIPs)
	}
	env = map[string]string{"POD_IPS": "not-an-ip"}
	if err := c.LoadEnv(func(k string) string { return env[k] }); err == nil {
		t.Fatal("bad POD_IPS accepted")
	}
}

// An empty POD_IPS (no POD_IP either, or only separators) is refused,
// naming it: the doorman would not know its own addresses and could dial
// itself.
func TestAnEmptyPodIPsIsRefusedNamingIt(t *testing.T) {
	for _, env := range []map[string]string{{}, {"POD_IPS": ""}, {"POD_IPS": " , ,"}, {"POD_IPS": "", "POD_IP": ""}} {
		c := &Config{}
		err := c.LoadEnv(func(k string) string { return env[k] })
		if err == nil || !strings.HasPrefix(err.Error(), "POD_IPS is empty") {
			t.Errorf("%v: got %v, want a refusal naming POD_IPS", env, err)
		}
	}
}
