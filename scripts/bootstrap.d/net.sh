#!/usr/bin/env bash
# The pod network of localkube: Debian's CNI plugins (bridge + host-local attach each pod's network namespace
# to its node's bridge), iptables (kube-proxy's Service rules) and iproute2 (namespaces, veth, routes).
# Installs only the packages that are missing; needs root (see docs/local-kubernetes.md).
set -euo pipefail
log() { printf '[bootstrap net] %s\n' "$*" >&2; }
missing=()
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || missing+=(containernetworking-plugins)
command -v iptables-restore >/dev/null 2>&1 || missing+=(iptables)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  log "missing ${missing[*]} and this is not root: run 'apt-get install -y ${missing[*]}' (localkube cannot start)"
  exit 0
fi
log "installing Debian's ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 || log "apt-get update failed; trying the install with the current package lists"
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
