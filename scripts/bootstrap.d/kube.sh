#!/usr/bin/env bash
# Builds the local Kubernetes binaries from the Go module proxy, once, into a cache keyed by what they are built from:
#   etcd (hack/etcd), kube-apiserver, kube-controller-manager, kube-proxy, kubectl and helm (hack/kube), CoreDNS
#   (hack/coredns).
# Writes $BOOKIE_FLEET_CACHE/env.d/kube.sh, which scripts/bootstrap appends to the env file it prints.
# Run by scripts/bootstrap; can also be run alone (`--built` only says whether a build is needed). See
# docs/local-kubernetes.md.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${BOOKIE_FLEET_CACHE:-$HOME/.cache/bookie-fleet}"
log() { printf '[bootstrap kube] %s\n' "$*" >&2; }
fail() { log "$*"; exit 1; }

kube_version="v1.34.4"   # must match the require line of hack/kube/go.mod
helm_version="v3.19.5"   # must match the require line of hack/kube/go.mod (helm 3.19 is built against client-go v0.34)
go_min="1.24"

if ! command -v go >/dev/null 2>&1; then
  fail "missing 'go': install a Go toolchain >= $go_min from https://go.dev/dl/ and put its bin/ on PATH"
fi
go_have="$(go env GOVERSION | sed 's/^go//')"
if [ "$(printf '%s\n%s\n' "$go_min" "$go_have" | sort -V | head -n1)" != "$go_min" ]; then
  fail "Go $go_have is too old: Kubernetes ${kube_version} needs Go >= $go_min (https://go.dev/dl/)"
fi
grep -q "k8s.io/kubernetes $kube_version\$" "$repo/hack/kube/go.mod" \
  || fail "hack/kube/go.mod does not require k8s.io/kubernetes $kube_version; update kube_version in $0"
grep -q "helm.sh/helm/v3 $helm_version" "$repo/hack/kube/go.mod" \
  || fail "hack/kube/go.mod does not require helm.sh/helm/v3 $helm_version; update helm_version in $0"

# shellcheck source=scripts/bootstrap.d/lib/go.sh
source "$repo/scripts/bootstrap.d/lib/go.sh"
build_goflags="$go_build_flags -mod=readonly"
minor="$(echo "$kube_version" | cut -d. -f2)"
vpkg="k8s.io/component-base/version"
kube_ldflags="-s -w -X $vpkg.gitVersion=$kube_version -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor \
-X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z \
-X k8s.io/client-go/pkg/version.gitVersion=$kube_version -X k8s.io/client-go/pkg/version.gitMajor=1 \
-X k8s.io/client-go/pkg/version.gitMinor=$minor"
helm_ldflags="-X helm.sh/helm/v3/internal/version.version=$helm_version \
-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor \
-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor"
# The cache key: everything the binaries are built from (versions, build flags, module files), not this script's text.
key="$( { echo "$kube_version $helm_version $go_have $kube_ldflags $helm_ldflags $build_goflags"
          cat "$repo"/hack/kube/go.mod "$repo"/hack/kube/go.sum "$repo"/hack/kube/cmd/*/main.go \
              "$repo"/hack/etcd/go.mod "$repo"/hack/etcd/go.sum "$repo"/hack/etcd/main.go \
              "$repo"/hack/coredns/go.mod "$repo"/hack/coredns/go.sum "$repo"/hack/coredns/main.go; } \
        | sha256sum | cut -c1-12)"
dir="$cache/kube-$key"
bin="$dir/bin"
# `kube.sh --built`: whether they are built already (exit 0) or a run would build them (exit 1); builds nothing.
if [ "${1:-}" = "--built" ]; then
  [ -f "$dir/.complete" ]; exit $?
fi

mkdir -p "$cache"
exec 8>"$cache/.kube-build.lock"   # one build at a time (another bootstrap may run this concurrently)
flock 8
if [ ! -f "$dir/.complete" ]; then
  log "building etcd, kube-apiserver, kube-controller-manager, kube-proxy, kubectl $kube_version, CoreDNS and helm $helm_version into $bin"
  log "(a cold build takes tens of minutes on 2 cores; later runs reuse it)"
  rm -rf "$dir"; mkdir -p "$bin"
  export CGO_ENABLED=0
  export GOFLAGS="$build_goflags"
  timed() {  # timed <label> <command...>: runs the command, logs its wall time, records it in $dir/build-times
    local label="$1"; shift; local t0; t0="$(date +%s)"
    "$@" || fail "building $label failed (see the Go errors above); needs the Go module proxy (GOPROXY=$(go env GOPROXY)) and Go >= $go_min"
    local took=$(( $(date +%s) - t0 ))
    log "built $label in ${took}s"; echo "$label ${took}s" >> "$dir/build-times"
  }
  t_all="$(date +%s)"
  # helm is a tool of hack/kube's module (its `tool` line), so it is compiled with the very client-go,
  # apimachinery and kubectl packages the control plane uses: one build compiles them once for all five.
  timed "kube-apiserver+kube-controller-manager+kube-proxy+kubectl+helm" \
    bash -c "cd '$repo/hack/kube' && go build -ldflags '$kube_ldflags $helm_ldflags' -o '$bin/' ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-proxy ./cmd/kubectl helm.sh/helm/v3/cmd/helm"
  timed "etcd" bash -c "cd '$repo/hack/etcd' && go build -ldflags '-s -w' -o '$bin/etcd' ."
  timed "coredns" bash -c "cd '$repo/hack/coredns' && go build -ldflags '-s -w' -o '$bin/coredns' ."
  total=$(( $(date +%s) - t_all ))
  echo "total ${total}s (go $go_have, $(nproc) cores)" >> "$dir/build-times"
  log "Kubernetes binaries built in ${total}s"
  touch "$dir/.complete"
else
  log "using $bin (built before: $(tr '\n' ';' < "$dir/build-times"))"
fi

mkdir -p "$cache/env.d"
cat > "$cache/env.d/kube.sh" <<ENV
export BOOKIE_FLEET_KUBE_BIN="$bin"
export BOOKIE_FLEET_KUBE_VERSION="$kube_version"
export PATH="$bin:\$PATH"
ENV
