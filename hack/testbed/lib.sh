# Shared helpers for the test bed scripts. Sourced, never run.

# step prints a timestamped progress line on stderr.
step() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
info() { printf '%s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

napwake_cache() { echo "${NAPWAKE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/napwake}"; }

# bin_dir names the cache directory for one set of versions.
bin_dir() { echo "$(napwake_cache)/kube-$1-etcd-$2-$(go env GOVERSION)"; }

# with_progress WHAT CMD... runs a long CMD, saying every 30 s that WHAT is
# still going and for how long, and returns CMD's status.
with_progress() {
  local what=$1 start pid n=0; shift
  start=$(date +%s)
  "$@" & pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1; n=$((n + 1))
    [ $((n % 30)) = 0 ] && kill -0 "$pid" 2>/dev/null && info "      ... still $what ($(( $(date +%s) - start ))s so far)"
  done
  wait "$pid"
}
