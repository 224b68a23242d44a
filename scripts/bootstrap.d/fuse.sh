#!/usr/bin/env bash
# FUSE for the power-loss tests (tests/durability/): Debian's fuse3 (fusermount3 and libfuse3, which the mfusepy
# binding of requirements.lock loads). Installs it only when missing; needs root. /dev/fuse must exist too.
set -euo pipefail
log() { printf '[bootstrap fuse] %s\n' "$*" >&2; }
if command -v fusermount3 >/dev/null 2>&1 && ldconfig -p | grep -q 'libfuse3\.so\.3'; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  log "fuse3 is missing and this is not root: run 'apt-get install -y fuse3' (the power-loss tests need it)"
  exit 0
fi
log "installing Debian's fuse3"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 || log "apt-get update failed; trying the install with the current package lists"
apt-get install -y -qq --no-install-recommends fuse3 >&2
