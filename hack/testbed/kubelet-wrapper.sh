#!/usr/bin/env bash
# kubelet-wrapper.sh SYSCTL_DIR KUBELET ARGS...
#
# Runs kubelet so that it cannot change the host's kernel settings. kubelet
# writes vm.overcommit_memory, vm.panic_on_oom, kernel.panic,
# kernel.panic_on_oops and kernel.keys.root_max{keys,bytes} whenever they
# differ from what it wants. In a private mount namespace we cover each
# /proc/sys file with a read-only file already holding kubelet's value, so it
# reads what it wants and writes nothing. (The kubelet config also sets
# protectKernelDefaults, so without this wrapper it refuses to start rather
# than change the host.)
set -euo pipefail
dir=$1; shift
if [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ]; then
  echo "kubelet-wrapper: refusing to run in the host's mount namespace (start it under unshare -m)" >&2
  exit 1
fi
# Private /proc: the covers must not propagate to the host's /proc/sys.
mount --make-rprivate /proc
while IFS= read -r -d '' f; do
  rel=${f#"$dir"/}
  mount --bind "$f" "/proc/sys/$rel"
  mount -o remount,bind,ro "/proc/sys/$rel"
done < <(find "$dir" -type f -print0)
exec "$@"
