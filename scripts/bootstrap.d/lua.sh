#!/usr/bin/env bash
# Debian's Lua 5.1 and lua-cjson, to run the Argo CD health check of deploy/argocd/ in tests/operator: Argo CD
# runs health checks in gopher-lua, which implements Lua 5.1, so a 5.1 interpreter reads them as Argo CD does.
# Installed only when missing; needs root (CI and the dev machines run as root).
set -euo pipefail
log() { printf '[bootstrap lua] %s\n' "$*" >&2; }
# shellcheck source=scripts/bootstrap.d/lib/debian-packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-packages.sh"
if command -v lua5.1 >/dev/null 2>&1 && lua5.1 -e 'require("cjson")' 2>/dev/null; then
  exit 0
fi
install_debian_packages "the Argo CD health check tests need it" lua5.1 lua-cjson || exit 0
lua5.1 -v >&2
