#!/usr/bin/env bash
# FUSE for the power-loss tests (tests/durability/): Debian's fuse3 (fusermount3 and libfuse3, which the mfusepy
# binding of requirements.lock loads). Installs it only when missing; needs root. /dev/fuse must exist too.
set -euo pipefail
log() { printf '[bootstrap fuse] %s\n' "$*" >&2; }
# shellcheck source=scripts/bootstrap.d/lib/debian-packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-packages.sh"
if command -v fusermount3 >/dev/null 2>&1 && ldconfig -p | grep -q 'libfuse3\.so\.3'; then
  exit 0
fi
install_debian_packages "the power-loss tests need it" fuse3 || exit 0
