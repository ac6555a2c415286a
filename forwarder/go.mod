module napwake.dev/forwarder

go 1.26.0

require (
	github.com/go-logr/logr v1.4.3
	github.com/prometheus/client_golang v1.24.0
	golang.org/x/sys v0.47.0
	napwake.dev/shared v0.0.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.70.0 // indirect
	github.com/prometheus/procfs v0.21.1 // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
)

// In this repository, go.work ties the modules together; these replaces let
// `go mod tidy` and a GOWORK=off build of this module alone work too.
replace (
	napwake.dev/apis => ../apis
	napwake.dev/shared => ../shared
)
