#!/usr/bin/env bash
# libfiu for the failing-device fault scenarios (tests/faults/, docs/reliability.md): Debian's fiu-utils (fiu-run,
# fiu-ctrl) and libfiu0 (the preloaded POSIX wrappers that make chosen libc calls fail with a chosen errno).
# Installs them only when missing; needs root.
set -euo pipefail
log() { printf '[bootstrap fiu] %s\n' "$*" >&2; }
# shellcheck source=scripts/bootstrap.d/lib/debian-packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-packages.sh"
if command -v fiu-run >/dev/null 2>&1 && command -v fiu-ctrl >/dev/null 2>&1 \
    && ldconfig -p | grep -q 'libfiu\.so\.0'; then
  exit 0
fi
install_debian_packages "the failing-device fault scenarios need it" fiu-utils libfiu0 || exit 0
