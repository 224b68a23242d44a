#!/usr/bin/env bash
# NetworkPolicy for the local Kubernetes and the tests, built once with `go install` from the Go module proxy
# into a cache keyed by their versions:
#   kube-router, of which localkube runs only the firewall controller (NetworkPolicy enforcement with iptables
#     and ipset in the node's network namespace; docs/local-kubernetes.md). kube-router has had security
#     flaws reported against it: it is used here for a local test cluster only, never in a product image;
#   cyclonus, whose `analyze` reads NetworkPolicy files and says which traffic they allow (no cluster needed):
#     a second, independent reading of the operator's policies (tests/operator).
# Writes $BOOKIE_FLEET_CACHE/env.d/netpolicy.sh, which scripts/bootstrap appends to the env file it prints.
set -euo pipefail
cache="${BOOKIE_FLEET_CACHE:-$HOME/.cache/bookie-fleet}"
log() { printf '[bootstrap netpolicy] %s\n' "$*" >&2; }
fail() { log "$*"; exit 1; }
# shellcheck source=scripts/bootstrap.d/lib/cache.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cache.sh"
# shellcheck source=scripts/bootstrap.d/lib/debian-packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-packages.sh"

# kube-router's firewall keeps the peers of each policy in ipsets, through Debian's ipset command.
command -v ipset >/dev/null 2>&1 || install_debian_packages "localkube cannot enforce NetworkPolicy" ipset || true

# The /v2 module path is the one the proxy serves for kube-router 2.x.
kube_router="github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@v2.1.0"
cyclonus="github.com/mattfenwick/cyclonus/cmd/cyclonus@v0.5.6"

command -v go >/dev/null 2>&1 || fail "missing 'go': install a Go toolchain (https://go.dev/dl/) and put its bin/ on PATH"
go_have="$(go env GOVERSION)"
# shellcheck source=scripts/bootstrap.d/lib/go.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/go.sh"
build_goflags="$go_build_flags"
key="$(echo "$kube_router $cyclonus $go_have $build_goflags" | sha256sum | cut -c1-12)"
dir="$cache/netpolicy-$key"
bin="$dir/bin"

mkdir -p "$cache"
exec 7>"$cache/.netpolicy-build.lock"   # one build at a time (another bootstrap may run this concurrently)
flock 7
if [ ! -f "$dir/.complete" ]; then
  rm -rf "$dir"; mkdir -p "$bin"
  for module in "$kube_router" "$cyclonus"; do
    log "building $module into $bin"
    t0="$(date +%s)"
    CGO_ENABLED=0 GOFLAGS="$build_goflags" GOBIN="$bin" go install -ldflags '-s -w' "$module" \
      || fail "building $module failed (see the Go errors above); needs the Go module proxy (GOPROXY=$(go env GOPROXY))"
    echo "$module $(( $(date +%s) - t0 ))s" >> "$dir/build-times"
  done
  touch "$dir/.complete"
else
  log "using $bin (built before: $(tr '\n' ';' < "$dir/build-times"))"
fi
prune_cache_entries "$cache" netpolicy "$dir"

mkdir -p "$cache/env.d"
cat > "$cache/env.d/netpolicy.sh" <<ENV
export BOOKIE_FLEET_NETPOLICY_BIN="$bin"
ENV
