#!/usr/bin/env bash
# NetworkPolicy for the local Kubernetes and the tests, built once from the Go module proxy (hack/netpolicy) into a
# cache keyed by what they are built from:
#   kube-router, of which localkube runs only the firewall controller (NetworkPolicy enforcement with iptables
#     and ipset in the node's network namespace; docs/local-kubernetes.md). kube-router has had security
#     flaws reported against it: it is used here for a local test cluster only, never in a product image;
#   cyclonus, whose `analyze` reads NetworkPolicy files and says which traffic they allow (no cluster needed):
#     a second, independent reading of the operator's policies (tests/operator).
# hack/netpolicy keeps the modules they share with the control plane at hack/kube's versions
# (scripts/align-go-modules): built after the Kubernetes binaries (scripts/bootstrap), this build reuses the
# client-go, apimachinery and gRPC packages that build compiled.
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

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
src="$repo/hack/netpolicy"
# The /v2 module path is the one the proxy serves for kube-router 2.x.
kube_router="github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
cyclonus="github.com/mattfenwick/cyclonus/cmd/cyclonus"
command -v go >/dev/null 2>&1 || fail "missing 'go': install a Go toolchain (https://go.dev/dl/) and put its bin/ on PATH"
# shellcheck source=scripts/bootstrap.d/lib/go.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/go.sh"
build_goflags="$go_build_flags -mod=readonly"
key="$( { go env GOVERSION; echo "$build_goflags"; cat "$src/go.mod" "$src/go.sum"; } | sha256sum | cut -c1-12)"
dir="$cache/netpolicy-$key"
bin="$dir/bin"
mkdir -p "$cache"
exec 7>"$cache/.netpolicy-build.lock"   # one build at a time (another bootstrap may run this concurrently)
flock 7
if [ ! -f "$dir/.complete" ]; then
  rm -rf "$dir"; mkdir -p "$bin"
  log "building kube-router and cyclonus (hack/netpolicy) into $bin"
  t0="$(date +%s)"
  (cd "$src" && CGO_ENABLED=0 GOFLAGS="$build_goflags" go build -ldflags '-s -w' -o "$bin/" "$kube_router" "$cyclonus") \
    || fail "building kube-router and cyclonus failed (see the Go errors above); needs the Go module proxy (GOPROXY=$(go env GOPROXY))"
  echo "kube-router+cyclonus $(( $(date +%s) - t0 ))s" >> "$dir/build-times"
  touch "$dir/.complete"
else
  log "using $bin (built before: $(tr '\n' ';' < "$dir/build-times"))"
fi
prune_cache_entries "$cache" netpolicy "$dir"

mkdir -p "$cache/env.d"
cat > "$cache/env.d/netpolicy.sh" <<ENV
export BOOKIE_FLEET_NETPOLICY_BIN="$bin"
ENV
