#!/usr/bin/env bash
# Builds the GitOps checkers of hack/gitops from the Go module proxy, once, into a cache keyed by what they are
# built from: kstatus (sigs.k8s.io/cli-utils' reading of a resource's health, as Flux and kpt use it) and
# olm-validate (operator-framework's bundle validators). The tests in tests/operator run them.
# Writes $BOOKIE_FLEET_CACHE/env.d/gitops.sh, which scripts/bootstrap appends to the env file it prints.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${BOOKIE_FLEET_CACHE:-$HOME/.cache/bookie-fleet}"
log() { printf '[bootstrap gitops] %s\n' "$*" >&2; }
# shellcheck source=scripts/bootstrap.d/lib/cache.sh
source "$repo/scripts/bootstrap.d/lib/cache.sh"
# shellcheck source=scripts/bootstrap.d/lib/go.sh
source "$repo/scripts/bootstrap.d/lib/go.sh"
command -v go >/dev/null 2>&1 || { log "missing 'go': the GitOps checkers build with the Go toolchain"; exit 1; }

src="$repo/hack/gitops"
key="$( { go env GOVERSION; echo "$go_build_flags"; cat "$src/go.mod" "$src/go.sum" "$src"/cmd/*/main.go; } | sha256sum | cut -c1-12)"
dir="$cache/gitops-$key"
mkdir -p "$cache"
exec 7>"$cache/.gitops-build.lock"   # one build at a time
flock 7
if [ ! -f "$dir/.complete" ]; then
  log "building kstatus and olm-validate into $dir/bin"
  rm -rf "$dir"; mkdir -p "$dir/bin"
  (cd "$src" && CGO_ENABLED=0 GOFLAGS="$go_build_flags -mod=readonly" \
     go build -ldflags '-s -w' -o "$dir/bin/" ./cmd/kstatus ./cmd/olm-validate) \
    || { log "building hack/gitops failed (see the Go errors above); it needs the Go module proxy"; exit 1; }
  touch "$dir/.complete"
fi
prune_cache_entries "$cache" gitops "$dir"
mkdir -p "$cache/env.d"
cat > "$cache/env.d/gitops.sh" <<ENV
export BOOKIE_FLEET_GITOPS_BIN="$dir/bin"
ENV
