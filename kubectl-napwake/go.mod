module napwake.dev/kubectl-napwake

go 1.26.0

// No replace directives: `go install napwake.dev/kubectl-napwake@vX` refuses
// a module that has them. In this repository go.work puts ./apis and ./shared
// in their place; see README.md, "How the plugin gets napwake.dev/apis".
require (
	github.com/spf13/cobra v1.10.2
	k8s.io/api v0.37.2
	k8s.io/apimachinery v0.37.2
	k8s.io/cli-runtime v0.37.2
	k8s.io/client-go v0.37.2
	napwake.dev/apis v0.1.0
	napwake.dev/shared v0.1.0
	sigs.k8s.io/controller-runtime v0.25.2
)
