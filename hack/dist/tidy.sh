#!/usr/bin/env bash
# tidy.sh runs `go mod tidy` on kubectl-napwake alone. Its go.mod requires
# released versions of napwake.dev/apis and napwake.dev/shared and may carry
# no replace (go install refuses one), so tidy alone could not find them
# before they are tagged: this adds directory replaces for the run and
# removes them again, whatever happens.
set -euo pipefail

mod=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../kubectl-napwake" && pwd)
cd "$mod"
cleanup() { go mod edit -dropreplace=napwake.dev/apis -dropreplace=napwake.dev/shared; }
trap cleanup EXIT
go mod edit -replace=napwake.dev/apis=../apis -replace=napwake.dev/shared=../shared
GOWORK=off GOFLAGS=-mod=mod go mod tidy
