//go:build tools

// Package helm pins the helm binary the chart is rendered, tested and
// installed with. It is its own module, outside go.work, so the Helm SDK and
// its dependencies never reach the workspace's modules. Build it with
//
//	GOWORK=off go -C hack/helm build -o ../../bin/helm helm.sh/helm/v3/cmd/helm
package helm

import _ "helm.sh/helm/v3/cmd/helm"
