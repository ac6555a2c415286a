// Package chart proves the Napwake Helm chart (charts/napwake): each value's
// effect on the objects `helm template` renders, every pod meeting Pod
// Security "restricted", every object accepted by a real API server (server
// side dry run, in a namespace enforcing "restricted"), the RBAC and the
// ValidatingAdmissionPolicies denying for real (impersonating the
// components' ServiceAccounts), and a helm install, doorman-only upgrade and
// uninstall against that API server.
//
// It runs the pinned helm binary (bin/helm, built by hack/helm/build.sh when
// missing) and one envtest API server (napwake.dev/shared/testenv) for the
// package.
package chart
