#!/usr/bin/env bash
# Benchmarks the operator against the real API server (envtest): the time to
# pause 500 of 1000 and 1000 of 5000 ManagedWorkloads, divided by the time a bare client takes
# for the same requests at the same concurrency (target <= 1.5), and the
# operator's heap per ManagedWorkload. Prints the go test -bench output.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z "${KUBEBUILDER_ASSETS:-}" ]]; then
	KUBEBUILDER_ASSETS=$("$root/hack/testbed/build-binaries.sh" etcd kube-apiserver kubectl | tail -n1)
	export KUBEBUILDER_ASSETS
fi
cd "$root/operator"
go test -p 1 -timeout 30m -run '^$' -bench 'BenchmarkPause/' -benchtime 1x ./internal/manager/ "$@"
