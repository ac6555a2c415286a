// Package chart proves the Napwake Helm chart (charts/napwake): each value's
// effect on the objects `helm template` renders, every pod meeting Pod
// Security "restricted", every object accepted by a real API server (server
// side dry run, in a namespace enforcing "restricted"), the RBAC and the
// ValidatingAdmissionPolicies denying for real (impersonating the
// components' ServiceAccounts), people bound to the built-in view, edit and
// admin roles running the kubectl plugin (built from this checkout, with
// --as), and a helm install, doorman-only upgrade and uninstall against that
// API server, and the upgrade of a release whose CRD came from the chart's
// old crds/ folder (docs/upgrade.md's adoption, run as written).
//
// It runs the pinned helm binary (bin/helm, built by hack/helm/build.sh when
// missing) and one envtest API server (napwake.dev/shared/testenv) for the
// package. envtest runs no controller-manager, so for people's access it
// runs kube-controller-manager with only its clusterrole-aggregation
// controller, from the envtest binaries' directory.
package chart
