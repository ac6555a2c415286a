#!/usr/bin/env bash
# make test: every test, each step timed. Steps run one after another (two
# cores: two compiling steps side by side only slow each other); meanwhile
# the Go modules every later step needs download in the background, so a
# cold run's compiles do not wait on the network step by step.
#
# One step runs beside the others: release-check (TEST_BESIDE), which only
# compiles and checks files, starts at its place in the order and goes on
# in the background at the lowest CPU priority (nice 19) while the later
# steps run; the end-to-end suite mostly waits on pods and timers, and the
# release's cross-compiles fill those idle cores (a cold run's release
# check is 6.5 minutes of compiling). It writes only to its own directories
# (hack/dist/release.sh builds into a temporary bin/), never to a file a
# later step reads. Its log is _out/release-check.log; its result is
# printed when it ends, and the run fails if it failed.
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

beside=" ${TEST_BESIDE-release-check} "
beside_pids=()
# stop_beside ends the background steps (and what they started) when the
# run stops early.
stop_beside() {
  local p
  for p in "${beside_pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
}
trap stop_beside EXIT

# run_beside STEP runs make STEP in its own process group at nice 19, its
# output in _out/STEP.log, and appends its line to the steps table.
run_beside() {
  local s=$1 t0
  t0=$(date +%s)
  if nice -n 19 make --no-print-directory "$s" >"$out/$s.log" 2>&1; then
    printf '%s\t%s\tok, beside the later steps\n' "$s" "$(( $(date +%s) - t0 ))" >>"$timings"
    say "make $s (in the background): ok in $(( $(date +%s) - t0 ))s; its log is _out/$s.log"
  else
    printf '%s\t%s\tFAILED, beside the later steps\n' "$s" "$(( $(date +%s) - t0 ))" >>"$timings"
    say "make $s (in the background) FAILED after $(( $(date +%s) - t0 ))s; the last lines of _out/$s.log:"
    tail -n 40 "$out/$s.log" | sed 's/^/    /'
    return 1
  fi
}

t_all=$(date +%s)
rc=0
last=${steps##* }
for s in $steps; do
  if [[ $beside == *" $s "* && $s != "$last" ]]; then
    say "make $s: starting in the background at nice 19 beside the steps after it (its log: _out/$s.log)"
    setsid bash -c "$(declare -f say run_beside); out='$out' timings='$timings' run_beside '$s'" &
    beside_pids+=("$!")
    continue
  fi
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
if [ "$rc" = 0 ] && [ "${#beside_pids[@]}" -gt 0 ]; then
  say "waiting for the steps run in the background"
  for p in "${beside_pids[@]}"; do wait "$p" || rc=1; done
  beside_pids=()
fi
[ -n "$prefetch_pid" ] && kill "$prefetch_pid" 2>/dev/null || true
printf 'total\t%s\t%s\n' "$(( $(date +%s) - t_all ))" "$([ "$rc" = 0 ] && echo ok || echo FAILED)" >>"$timings"

GOWORK=off go -C "$root/hack/tools" run ./timings -steps "$timings" -unit "$out/unit.json" -e2e "$out/e2e-report.json" \
  | tee "$out/timings.txt" || true
exit "$rc"
