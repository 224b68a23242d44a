#!/usr/bin/env bash
# The container runtime of localkube's pod runner: Debian's runc and umoci (unpacks OCI images into a root
# filesystem), plus busybox-static, from which the runner's tests build a small image, and xfsprogs, whose
# mkfs.xfs/xfs_growfs make the volumes of the standard-xfs StorageClass and grow them. Installs only the
# packages that are missing (another bootstrap step may install runc/umoci too); needs root.
set -euo pipefail
log() { printf '[bootstrap runc] %s\n' "$*" >&2; }
missing=()
command -v runc >/dev/null 2>&1 || missing+=(runc)
command -v umoci >/dev/null 2>&1 || missing+=(umoci)
[ -x /bin/busybox ] || missing+=(busybox-static)
command -v xfs_growfs >/dev/null 2>&1 || missing+=(xfsprogs)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  log "missing ${missing[*]} and this is not root: run 'apt-get install -y ${missing[*]}' (pods cannot run containers)"
  exit 0
fi
log "installing Debian's ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 || log "apt-get update failed; trying the install with the current package lists"
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
