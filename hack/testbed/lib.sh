# Shared helpers for the test bed scripts. Sourced, never run.

# step prints a timestamped progress line on stderr.
step() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
info() { printf '%s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

napwake_cache() { echo "${NAPWAKE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/napwake}"; }

# bin_dir names the cache directory for one set of versions.
bin_dir() { echo "$(napwake_cache)/kube-$1-etcd-$2-$(go env GOVERSION)"; }
