#!/usr/bin/env bash
# Regenerates deploy/install.yaml, deploy/kustomize and the chart README from
# charts/napwake (make generate calls it).
exec "$(dirname "${BASH_SOURCE[0]}")/render.sh"
