package render

import (
	"fmt"
	"io"

	"napwake.dev/shared/version"
)

// Unknown is the operator version shown when it cannot be read.
const Unknown = "unknown"

// OperatorVersion is what the cluster says about the operator's version.
type OperatorVersion struct {
	// Version is the app.kubernetes.io/version label of the operator's pods
	// (several, comma-separated, during an upgrade), or "unknown".
	Version string `json:"version"`
	// Namespace is where the operator's pods run, when found.
	Namespace string `json:"namespace,omitempty"`
	// Reason says why the version is unknown.
	Reason string `json:"reason,omitempty"`
}

// VersionReport is `kubectl napwake version`, also its -o json/yaml shape.
type VersionReport struct {
	// Plugin is this binary's build.
	Plugin version.Info `json:"plugin"`
	// Operator is the operator's version as found in the cluster.
	Operator OperatorVersion `json:"operator"`
}

// Version renders a VersionReport for people.
func Version(w io.Writer, r VersionReport, o Options) {
	fmt.Fprintf(w, "Plugin:   %s\n", r.Plugin.String())
	op := r.Operator.Version
	switch {
	case op == Unknown && r.Operator.Reason != "":
		op = o.paint(yellow, op) + " (" + r.Operator.Reason + ")"
	case r.Operator.Namespace != "":
		op += " (namespace " + r.Operator.Namespace + ")"
	}
	fmt.Fprintf(w, "Operator: %s\n", clean(op))
}
