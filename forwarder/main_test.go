package main

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"napwake.dev/shared/version"
)

func TestMetricsServeTheBuildInfo(t *testing.T) {
	srv := httptest.NewServer(metricsHandler(version.Info{Version: "v0.3.0", Commit: "abc123", GoVersion: "go1.26.0"}))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if want := `napwake_build_info{commit="abc123",goversion="go1.26.0",version="v0.3.0"} 1`; !strings.Contains(string(body), want) {
		t.Fatalf("/metrics lacks %s:\n%s", want, body)
	}
}
