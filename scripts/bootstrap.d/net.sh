#!/usr/bin/env bash
# The pod network of localkube: Debian's CNI plugins (bridge + host-local attach each pod's network namespace
# to its node's bridge), iptables (kube-proxy's Service rules) and iproute2 (namespaces, veth, routes); nft
# (nftables) for the network partitions of tests/faults (tests/support/faults.py).
# Installs only the packages that are missing; needs root (see docs/local-kubernetes.md).
set -euo pipefail
log() { printf '[bootstrap net] %s\n' "$*" >&2; }
# shellcheck source=scripts/bootstrap.d/lib/debian-packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-packages.sh"
missing=()
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || missing+=(containernetworking-plugins)
command -v iptables-restore >/dev/null 2>&1 || missing+=(iptables)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
[ ${#missing[@]} -eq 0 ] && exit 0
install_debian_packages "localkube (or a partition scenario) cannot start" "${missing[@]}" || exit 0
