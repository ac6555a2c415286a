// Package buildinfo exports a build's identity (package version) as the
// Prometheus gauge napwake_build_info{version,commit,goversion}, always 1,
// as Prometheus' own *_build_info gauges do: a dashboard or an alert joins
// on it to tell which release each pod runs, and a rollout shows as two
// versions side by side. Each component registers it once; the scrape's
// job label tells the components apart.
package buildinfo

import (
	"github.com/prometheus/client_golang/prometheus"

	"napwake.dev/shared/version"
)

// Name is the gauge's name, the same in every component.
const Name = "napwake_build_info"

// Collector returns the gauge for info, set to 1, unregistered.
func Collector(info version.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: Name,
		Help: "Always 1: the component's version, the commit it was built from and the Go version that built it.",
		ConstLabels: prometheus.Labels{
			"version":   info.Version,
			"commit":    info.Commit,
			"goversion": info.GoVersion,
		},
	})
	g.Set(1)
	return g
}
