package buildinfo

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"napwake.dev/shared/version"
)

func TestBuildInfoCarriesTheVersionCommitAndGoVersion(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector(version.Info{Component: "doorman", Version: "v0.3.0", Commit: "abc123", GoVersion: "go1.26.0"}))
	want := `
# HELP napwake_build_info Always 1: the component's version, the commit it was built from and the Go version that built it.
# TYPE napwake_build_info gauge
napwake_build_info{commit="abc123",goversion="go1.26.0",version="v0.3.0"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), Name); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
}
