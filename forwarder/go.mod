module napwake.dev/forwarder

go 1.26.0

require (
	github.com/go-logr/logr v1.4.3
	golang.org/x/sys v0.47.0
	napwake.dev/shared v0.0.0
)

// In this repository, go.work ties the modules together; these replaces let
// `go mod tidy` and a GOWORK=off build of this module alone work too.
replace (
	napwake.dev/apis => ../apis
	napwake.dev/shared => ../shared
)
