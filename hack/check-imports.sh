#!/usr/bin/env bash
# The module boundaries: components import only napwake.dev/apis and
# napwake.dev/shared, never each other; apis imports only the standard
# library, apimachinery and k8s.io/api, so anyone can import it cheaply.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
components=(operator doorman forwarder kubectl-napwake)
for c in "${components[@]}"; do
  [ -d "$c" ] || continue
  # -test lists test variants as "pkg [pkg.test]" and "pkg.test": keep the package path.
  bad=$(go list -e -deps -test "./$c/..." 2>/dev/null | awk '{print $1}' | sed 's/\.test$//' | sort -u |
    grep -E '^napwake\.dev/' | grep -vE "^napwake\.dev/($c|apis|shared)(/|$)" || true)
  if [ -n "$bad" ]; then
    echo "import rule broken: $c imports another component:"; echo "$bad" | sed 's/^/  /'; fail=1
  fi
done
bad=$(go list -f '{{range .Imports}}{{.}}{{"\n"}}{{end}}' ./apis/... | sort -u |
  grep -vE '^(k8s\.io/apimachinery/|k8s\.io/api/|napwake\.dev/apis/)' | grep '\.' || true)
if [ -n "$bad" ]; then
  echo "import rule broken: apis imports more than apimachinery and k8s.io/api:"; echo "$bad" | sed 's/^/  /'; fail=1
fi
[ "$fail" = 0 ] && echo "imports: components import only apis and shared; apis only apimachinery and k8s.io/api"
exit "$fail"
