#!/usr/bin/env bash
# Fails when deploy/install.yaml, deploy/kustomize or the chart README is not
# what charts/napwake renders (make verify calls it).
exec "$(dirname "${BASH_SOURCE[0]}")/render.sh" --verify
