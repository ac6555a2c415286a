// Package testenv starts a real etcd and kube-apiserver for tests (envtest),
// from the binaries the test bed builds from source, with Napwake's CRDs
// installed (from config/crd, where make generate writes them). Tests never
// use a fake client as proof that a feature works.
//
// Use one Environment per package, from TestMain, through Run (or
// RunWithoutCRDs, for a suite that installs the CRDs itself, as the chart's
// does with helm); poll with Eventually, whose defaults are set once here for
// every suite.
//
// It lives in shared although the go install-able plugin requires shared:
// it adds no module requirement (envtest is in controller-runtime, which
// shared's logging needs anyway), and go install builds only the packages
// the plugin imports, never this one.
package testenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RepoRoot returns the repository's top directory: the first parent of the
// working directory holding go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory: run tests from inside the Napwake repository")
		}
		dir = parent
	}
}

// AssetsDir returns a directory holding etcd, kube-apiserver and kubectl:
// $KUBEBUILDER_ASSETS when set (the Makefile sets it), else the test bed's
// cache, building what is missing (minutes the first time).
func AssetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "hack/testbed/build-binaries.sh"), "etcd", "kube-apiserver", "kubectl")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building envtest binaries (run `make envtest-bins` to see why): %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// CRDDir returns config/crd, the directory controller-gen writes Napwake's
// CRDs to (make generate); the chart's CRD templates are made from them.
func CRDDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "config", "crd"), nil
}

// Start starts etcd and kube-apiserver with Napwake's CRDs installed, and
// returns the environment (Stop it when done) and a config for clients.
// Prefer Run, which also removes the wrapper scripts Start writes.
//
// Each binary runs under `setpriv --pdeathsig KILL`, so a test binary killed
// by a timeout does not orphan them.
func Start() (*envtest.Environment, *rest.Config, error) {
	return start(true)
}

func start(withCRDs bool) (*envtest.Environment, *rest.Config, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, nil, err
	}
	wrapped, err := wrapWithPdeathsig(assets)
	if err != nil {
		return nil, nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: wrapped}
	if withCRDs {
		dir, err := CRDDir()
		if err != nil {
			return nil, nil, err
		}
		env.CRDDirectoryPaths, env.ErrorIfCRDPathMissing = []string{dir}, true
	}
	// 1.37 refuses a loopback advertise address with the default endpoint
	// reconciler, and inside a network namespace without a default route
	// envtest cannot pick any other.
	api := env.ControlPlane.GetAPIServer()
	api.Configure().Set("advertise-address", "127.0.0.1")
	api.Configure().Set("endpoint-reconciler-type", "none")
	// Dual-stack, so IPv6 and dual-stack Services get ClusterIPs; single-stack
	// Services still get an IPv4 one, as on most clusters.
	api.Configure().Set("service-cluster-ip-range", "10.0.0.0/16,fd00:10::/108")
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting envtest from %s: %w", assets, err)
	}
	return env, cfg, nil
}

// wrapperPrefix names the temporary directory of wrapWithPdeathsig's scripts.
const wrapperPrefix = "napwake-envtest-bin-"

// removeWrappers deletes the scripts Start wrapped the binaries in, so a
// test run leaves /tmp as it found it.
func removeWrappers(env *envtest.Environment) {
	if d := env.BinaryAssetsDirectory; strings.HasPrefix(filepath.Base(d), wrapperPrefix) {
		_ = os.RemoveAll(d)
	}
}

func wrapWithPdeathsig(assets string) (string, error) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		return assets, nil // util-linux missing: run unwrapped
	}
	dir, err := os.MkdirTemp("", wrapperPrefix)
	if err != nil {
		return "", err
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
		real := filepath.Join(assets, name)
		if _, err := os.Stat(real); err != nil {
			return "", fmt.Errorf("%s missing from %s: run `make envtest-bins`", name, assets)
		}
		script := fmt.Sprintf("#!/bin/sh\nexec setpriv --pdeathsig KILL %q \"$@\"\n", real)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// Suite is what a package's TestMain gets from Run: the environment (to add
// users) and an admin config for clients.
type Suite struct {
	Env    *envtest.Environment
	Config *rest.Config

	cleanups []func()
}

// Cleanup registers f to run after the tests, before the environment stops
// (last registered, first run).
func (s *Suite) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

// Run is the body of every envtest package's TestMain: it starts the
// environment, hands it to setup (clients, namespaces, users), runs the tests,
// runs the cleanups, stops the environment and returns the exit code for
// os.Exit. A run that only fuzzes (-fuzz, and each fuzz worker) starts no API
// server: fuzz targets here are pure, and every worker would start its own.
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m, setup)) }
func Run(m *testing.M, setup func(*Suite) error) int {
	return run(m, setup, true)
}

// RunWithoutCRDs is Run with no CRD installed: for a suite that installs
// Napwake's CRDs itself (the chart's, with helm, as a user would).
func RunWithoutCRDs(m *testing.M, setup func(*Suite) error) int {
	return run(m, setup, false)
}

func run(m *testing.M, setup func(*Suite) error, withCRDs bool) int {
	if fuzzing() {
		return m.Run()
	}
	env, cfg, err := start(withCRDs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s := &Suite{Env: env, Config: cfg}
	defer func() {
		for i := len(s.cleanups) - 1; i >= 0; i-- {
			s.cleanups[i]()
		}
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test environment:", err)
		}
		removeWrappers(env)
	}()
	if setup != nil {
		if err := setup(s); err != nil {
			fmt.Fprintln(os.Stderr, "setting up the test environment:", err)
			return 1
		}
	}
	return m.Run()
}

// fuzzing reports whether this test binary runs only to fuzz.
func fuzzing() bool {
	flag.Parse() // TestMain runs before testing parses its flags
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return true
	}
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}
