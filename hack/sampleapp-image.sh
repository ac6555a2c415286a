#!/usr/bin/env bash
# Builds the sample app (e2e/cmd/sampleapp) and its image into
# _out/images/sampleapp.tar, and bin/imagebuild on the way: what the
# end-to-end suite (hack/e2e.sh) and the soak (hack/soak.sh) load.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p _out/images
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o _out/sampleapp ./e2e/cmd/sampleapp
GOWORK=off go -C hack/tools build -o "$root/bin/imagebuild" ./imagebuild
"$root/bin/imagebuild" --binary _out/sampleapp --image napwake.local/napwake-sampleapp:e2e --out _out/images/sampleapp.tar >/dev/null
