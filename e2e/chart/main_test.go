package chart

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"napwake.dev/shared/testenv"
)

var (
	// env is the package's envtest API server; cfg its admin config (system:masters).
	env *envtest.Environment
	cfg *rest.Config
	// helmHome holds helm's cache, config and data for this run.
	helmHome string
)

func TestMain(m *testing.M) {
	if _, err := helmBinary(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var err error
	if helmHome, err = os.MkdirTemp("", "napwake-chart-helm-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// No CRD from testenv: the chart installs it, as for a user, and the
	// upgrade test installs the CRD the way charts before it did.
	code := testenv.RunWithoutCRDs(m, func(s *testenv.Suite) error {
		env, cfg = s.Env, s.Config
		return nil
	})
	_ = os.RemoveAll(helmHome)
	os.Exit(code)
}
