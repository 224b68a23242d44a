#!/usr/bin/env bash
# The container runtime of localkube's pod runner: Debian's runc and umoci (unpacks OCI images into a root
# filesystem), plus busybox-static, from which the runner's tests build a small image, and xfsprogs, whose
# mkfs.xfs/xfs_growfs make the volumes of the standard-xfs StorageClass and grow them; and the seccomp profile
# of `seccompProfile: RuntimeDefault`: moby's default profile (the one Docker applies), printed once by
# hack/seccomp from its Go module into the cache. Installs only what is missing (another bootstrap step may
# install runc/umoci too); the packages need root. Writes $BOOKIE_FLEET_CACHE/env.d/runc.sh.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${BOOKIE_FLEET_CACHE:-$HOME/.cache/bookie-fleet}"
log() { printf '[bootstrap runc] %s\n' "$*" >&2; }
# shellcheck source=scripts/bootstrap.d/lib/debian-packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-packages.sh"

install_packages() {
  local missing=()
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v umoci >/dev/null 2>&1 || missing+=(umoci)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  command -v xfs_growfs >/dev/null 2>&1 || missing+=(xfsprogs)
  [ ${#missing[@]} -eq 0 ] && return 0
  install_debian_packages "pods cannot run containers" "${missing[@]}" || return 0
}

seccomp_profile() {
  if ! command -v go >/dev/null 2>&1; then
    log "missing 'go': no default seccomp profile (pods asking for seccompProfile RuntimeDefault cannot start)"
    return 0
  fi
  local key dir
  key="$( { go env GOVERSION; cat "$repo"/hack/seccomp/go.mod "$repo"/hack/seccomp/go.sum \
            "$repo"/hack/seccomp/main.go; } | sha256sum | cut -c1-12)"
  dir="$cache/seccomp-$key"
  if [ ! -s "$dir/default.json" ]; then
    log "printing moby's default seccomp profile (hack/seccomp) into $dir"
    mkdir -p "$dir"
    (source "$repo/scripts/bootstrap.d/lib/go.sh"
     cd "$repo/hack/seccomp" && CGO_ENABLED=0 GOFLAGS="$go_build_flags -mod=readonly" go run .) \
      > "$dir/default.json.tmp" || { log "hack/seccomp failed (see the Go errors above)"; return 1; }
    mv "$dir/default.json.tmp" "$dir/default.json"
  fi
  mkdir -p "$cache/env.d"
  printf 'export BOOKIE_FLEET_SECCOMP_PROFILE="%s"\n' "$dir/default.json" > "$cache/env.d/runc.sh"
}

install_packages
seccomp_profile
