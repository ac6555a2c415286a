#!/usr/bin/env bash
# The one list of Debian packages Napwake's demo and tests need, and their
# install: make demo, make test and .ci/run call it first. Installs only what
# is missing, says so once, and costs nothing when everything is there.
#   hack/packages.sh           install what is missing (root), or say how
#   hack/packages.sh --list    print the list
set -euo pipefail

packages=(
  containerd runc containernetworking-plugins iptables conntrack # the local cluster's node
  util-linux iproute2 openssl procps curl                        # nsenter/unshare, netns, certificates, ps, add-on readiness
  haproxy wrk                                                    # the doorman's benchmark peers and tests
  chromium-headless-shell                                        # the browser the asking scenarios drive (e2e)
)

if [ "${1:-}" = --list ]; then printf '%s\n' "${packages[@]}"; exit 0; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "error: missing Debian packages: ${missing[*]}" >&2
  echo "       run as root, or install them first: apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
printf '[%s] Installing the Debian packages Napwake needs (once): %s\n' "$(date +%H:%M:%S)" "${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
printf '[%s] Installed %d packages\n' "$(date +%H:%M:%S)" "${#missing[@]}" >&2
