#!/usr/bin/env bash
# make test: every test, each step timed. Steps run one after another (two
# cores: two compiling steps side by side only slow each other); meanwhile
# the Go modules every later step needs download in the background, so a
# cold run's compiles do not wait on the network step by step.
#
# At the end it prints one table: each step's time, then the ten slowest
# unit/envtest tests and the ten slowest end-to-end specs, so a regression
# shows at once. The same table is kept in _out/timings.txt.
#
#   hack/test.sh            every step
#   TEST_STEPS="verify test-unit" hack/test.sh   only those (names as below)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=$root/_out
mkdir -p "$out"
say() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

steps=${TEST_STEPS:-"packages envtest-bins verify test-unit release-check cluster-up images e2e"}
timings=$out/steps.tsv
: >"$timings"

# prefetch downloads every module the later steps build, in the background.
# It only fills the module cache (go mod download takes a lock per module),
# so a step that needs a module first simply downloads it itself.
prefetch() {
  local m
  go mod download >/dev/null 2>&1 || true
  for m in hack/testbed/kube hack/tools hack/lint hack/helm hack/chart; do
    GOWORK=off go -C "$m" mod download >/dev/null 2>&1 || true
  done
}
prefetch_pid=""
if [ ! -d "$(go env GOMODCACHE)/k8s.io" ]; then
  say "An empty module cache: downloading every step's Go modules in the background while the first steps build"
  prefetch >"$out/prefetch.log" 2>&1 &
  prefetch_pid=$!
fi

t_all=$(date +%s)
rc=0
for s in $steps; do
  t0=$(date +%s)
  say "make $s"
  # e2e's prerequisites (cluster-up, images) are steps of their own here.
  cmd=(make --no-print-directory "$s")
  [ "$s" = e2e ] && cmd=("$root/hack/e2e.sh")
  if ! "${cmd[@]}"; then
    rc=1
    printf '%s\t%s\tFAILED\n' "$s" "$(( $(date +%s) - t0 ))" >>"$timings"
    break
  fi
  printf '%s\t%s\tok\n' "$s" "$(( $(date +%s) - t0 ))" >>"$timings"
done
[ -n "$prefetch_pid" ] && kill "$prefetch_pid" 2>/dev/null || true
printf 'total\t%s\t%s\n' "$(( $(date +%s) - t_all ))" "$([ "$rc" = 0 ] && echo ok || echo FAILED)" >>"$timings"

GOWORK=off go -C "$root/hack/tools" run ./timings -steps "$timings" -unit "$out/unit.json" -e2e "$out/e2e-report.json" \
  | tee "$out/timings.txt" || true
exit "$rc"
