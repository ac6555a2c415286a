// Package version carries the build's version, set at link time:
//
//	go build -ldflags "-X napwake.dev/shared/version.Version=v0.1.0 -X napwake.dev/shared/version.Commit=abc123"
//
// Every Napwake binary prints it with --version and logs it at start.
//
// It must not be set by anything but the linker (hack/ldflags.sh).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by -ldflags -X at build time; see the Makefile's LDFLAGS.
var (
	// Version is the module's release, such as "v0.1.0"; "dev" in a plain build.
	Version = "dev"
	// Commit is the git commit the binary was built from.
	Commit = ""
)

// Info is the build's identity, printed by --version and `kubectl napwake version`.
type Info struct {
	Component string `json:"component"`
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's identity for component. Where ldflags set no
// commit, the VCS revision Go stamped into the binary is used.
func Get(component string) Info {
	commit := Commit
	if commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					commit = s.Value
				}
			}
		}
	}
	return Info{
		Component: component,
		Version:   Version,
		Commit:    commit,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// String renders the info on one line.
func (i Info) String() string {
	s := fmt.Sprintf("%s %s (%s, %s)", i.Component, i.Version, i.GoVersion, i.Platform)
	if i.Commit != "" {
		s += " commit " + i.Commit
	}
	return s
}
