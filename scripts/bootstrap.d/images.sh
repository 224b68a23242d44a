#!/usr/bin/env bash
# Builds the product's container images from their Dockerfiles, with no container registry and no Docker
# daemon, into one OCI image layout in the cache:
#   bookie-fleet/bookie:<tag>, bookie-fleet/operator:<tag>      bookie_image/Dockerfile, operator/Dockerfile
#   bookie-fleet/apache-bookkeeper:<BookKeeper version>         hack/apache-bookkeeper/Dockerfile
#   bookie-fleet/audit:<tag>                                    pipeline/Dockerfile (PySpark + a JRE)
# How: an offline base equivalent to python:3.11-slim-bookworm (debootstrap from the host's Debian mirror)
# imported into a private buildah store (overlay driver) under both names a Dockerfile may use, then
# `buildah bud` of the real Dockerfiles and `buildah push` into $cache/images-<hash>/oci. The hash covers
# everything the images are built from (Dockerfiles, runtime locks, the copied sources), so a warm bootstrap
# does nothing. Writes $BOOKIE_FLEET_CACHE/env.d/images.sh (BOOKIE_FLEET_IMAGES=<the layout>).
# Run by scripts/bootstrap (needs root: debootstrap, buildah); can also be run alone. See docs/images.md.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${BOOKIE_FLEET_CACHE:-$HOME/.cache/bookie-fleet}"
log() { printf '[bootstrap images] %s\n' "$*" >&2; }
fail() { log "$*"; exit 1; }

if [ "$(id -u)" != 0 ]; then
  log "not root: the images are not built (debootstrap and buildah need root); tests/images will fail"
  exit 0
fi

# --- Tools from Debian's packages, with what they recommend (debootstrap's gnupg and arch-test, buildah's
# fuse-overlayfs), one install at a time on this machine: the bootstrap builds the images beside its other parts,
# which install theirs.
# shellcheck source=scripts/bootstrap.d/lib/debian-packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-packages.sh"
missing=()
for tool in buildah:buildah umoci:umoci runc:runc debootstrap:debootstrap; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  install_debian_packages --with-recommends "the images cannot be built" "${missing[@]}"
fi

# --- What the images are: names, tags, Dockerfiles.
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/pyproject.toml" | head -n1)"
crd_tag="$(sed -n 's/^BOOKIE_IMAGE = "bookie-fleet\/bookie:\([^"]*\)".*/\1/p' "$repo/operator/bookie_operator/models.py")"
[ "$version" = "$crd_tag" ] || fail "pyproject.toml's version $version differs from the CRD's default bookie image tag $crd_tag (operator/bookie_operator/models.py)"
# The Java bookie image's BookKeeper version: its own pom's (the tests outside Kubernetes have hack/maven's).
bk_version="$(sed -n 's:.*<bookkeeper.version>\(.*\)</bookkeeper.version>.*:\1:p' "$repo/hack/apache-bookkeeper/pom.xml")"
bk_label="$(sed -n 's/^ARG bookkeeper_version=//p' "$repo/hack/apache-bookkeeper/Dockerfile")"
[ "$bk_version" = "$bk_label" ] || fail "hack/apache-bookkeeper/pom.xml's bookkeeper.version $bk_version differs from its Dockerfile's bookkeeper_version $bk_label (the image's label)"
images=(
  "bookie-fleet/bookie:$version bookie_image/Dockerfile"
  "bookie-fleet/operator:$version operator/Dockerfile"
  "bookie-fleet/apache-bookkeeper:$bk_version hack/apache-bookkeeper/Dockerfile"
  "bookie-fleet/audit:$version pipeline/Dockerfile"
)

store="$cache/buildah"
S=(--root "$store/storage" --runroot "$store/runroot" --storage-driver overlay)
base_name="python:3.11-slim-bookworm"

# --- The offline base: Debian bookworm minbase + python3, python3-venv, ca-certificates, slimmed like the
# official image. Keyed by its recipe (this block's text) and the mirror.
mirror="$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)"
[ -n "$mirror" ] || mirror="$(sed -n 's/^deb \(http[^ ]*debian\)\/* bookworm .*/\1/p' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -n1)"
[ -n "$mirror" ] || fail "no Debian mirror found in /etc/apt/sources.list{,.d}: needed for the offline base image"
base_recipe="$(sed -n '/^build_base()/,/^}/p' "${BASH_SOURCE[0]}")"
base_key="$(printf '%s\n%s\n' "$mirror" "$base_recipe" | sha256sum | cut -c1-12)"
build_base() {  # build_base <rootfs dir>: a root filesystem equivalent to python:3.11-slim-bookworm
  local rootfs="$1" out; out="$(dirname "$1")/base.log"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$out" 2>&1 || { tail -n 20 "$out" >&2; return 1; }
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s-security bookworm-security main\n' \
    "$mirror" "$mirror" "$mirror" > "$rootfs/etc/apt/sources.list"
  # No documentation, man pages or translations, now and in anything a Dockerfile installs later.
  printf 'path-exclude /usr/share/%s/*\n' doc man info locale lintian > "$rootfs/etc/dpkg/dpkg.cfg.d/slim"
  printf 'path-include /usr/share/doc/*/copyright\n' >> "$rootfs/etc/dpkg/dpkg.cfg.d/slim"
  mount -t proc proc "$rootfs/proc"
  chroot "$rootfs" sh -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -q && apt-get -y -q upgrade &&
    apt-get install -y -q --no-install-recommends python3 python3-venv ca-certificates &&
    apt-get clean && rm -rf /var/lib/apt/lists/*' >>"$out" 2>&1 || { tail -n 20 "$out" >&2; umount "$rootfs/proc"; return 1; }
  umount "$rootfs/proc"
  find "$rootfs/usr/share/doc" -type f ! -name copyright -delete
  rm -rf "$rootfs"/usr/share/{man,info,locale,lintian}/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log
}

exec 7>"$cache/.images-build.lock"   # one build at a time per cache
flock 7
mkdir -p "$store"
# Each recipe's base is kept under its own tag, so checkouts with different recipes sharing this cache do not
# rebuild it in turn: the two names a Dockerfile may use are pointed at the wanted one.
base_tag="localhost/bookie-fleet-base:$base_key"
if ! buildah "${S[@]}" inspect --type image "$base_tag" >/dev/null 2>&1; then
  log "building the offline base image $base_name from $mirror (debootstrap)"
  t0="$(date +%s)"
  work="$(mktemp -d "$cache/.base-XXXXXX")"
  trap 'mountpoint -q "$work/rootfs/proc" && umount "$work/rootfs/proc"; rm -rf "$work"' EXIT
  build_base "$work/rootfs" || fail "building the base root filesystem failed (debootstrap/apt above)"
  ctr="$(buildah "${S[@]}" from scratch)"
  mnt="$(buildah "${S[@]}" mount "$ctr")"
  tar -C "$work/rootfs" -cf - . | tar -C "$mnt" -xpf -
  buildah "${S[@]}" umount "$ctr" >/dev/null
  buildah "${S[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --cmd python3 \
    --label org.opencontainers.image.description="Debian bookworm minbase with python3 (offline stand-in for $base_name)" "$ctr"
  buildah "${S[@]}" commit -q --rm "$ctr" "$base_tag" >/dev/null
  rm -rf "$work"; trap - EXIT
  log "base image built in $(( $(date +%s) - t0 ))s"
fi
buildah "${S[@]}" tag "$base_tag" "localhost/$base_name" "docker.io/library/$base_name"

# --- The images, keyed by everything they are built from (and the base).
key="$( { echo "$base_key $version $bk_version"
          printf '%s\n' "${images[@]}"
          cd "$repo" && find .dockerignore pyproject.toml setup.py README.md requirements images scripts/build-image \
               bookie_image/Dockerfile bookie_image/bookie operator/Dockerfile operator/bookie_operator hack/apache-bookkeeper \
               pipeline/Dockerfile pipeline/bookie_audit pipeline/image \
               -type f ! -name '*.pyc' ! -name '*.so' ! -name '*.so.partial' ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum
        } | sha256sum | cut -c1-12)"
dir="$cache/images-$key"
layout="$dir/oci"
if [ ! -f "$dir/.complete" ]; then
  log "building ${#images[@]} images into $layout"
  rm -rf "$dir"; mkdir -p "$dir"
  t_all="$(date +%s)"
  # The Java bookie's jars, resolved by this machine's Maven (its settings: mirrors, proxies, credentials), are
  # the Dockerfile's build context `bookkeeper-jars`; this buildah has no --build-context, so they become a
  # local image of that name, which `COPY --from=bookkeeper-jars` reads (removed after the build).
  jars_image="localhost/bookkeeper-jars:latest"
  python3 "$repo/hack/apache-bookkeeper/jars.py" stage "$dir/bookkeeper-jars" >&2 \
    || fail "the Java bookie's jars were not resolved (Maven, above)"
  ctr="$(buildah "${S[@]}" from scratch)"
  buildah "${S[@]}" copy -q "$ctr" "$dir/bookkeeper-jars" / >/dev/null
  buildah "${S[@]}" commit -q --rm "$ctr" "$jars_image" >/dev/null
  rm -rf "$dir/bookkeeper-jars"
  for entry in "${images[@]}"; do
    name="${entry%% *}"; dockerfile="${entry#* }"
    t0="$(date +%s)"
    build_log="$dir/build-${name//[\/:]/_}.log"
    "$repo/scripts/build-image" "$store" "$repo/$dockerfile" "$repo" "$name" "$layout" "$build_log" \
      || fail "the images are not built (see above)"
    took=$(( $(date +%s) - t0 ))
    log "built $name in ${took}s"; echo "$name ${took}s" >> "$dir/build-times"
  done
  buildah "${S[@]}" rmi "$jars_image" >/dev/null
  echo "total $(( $(date +%s) - t_all ))s ($(nproc) cores)" >> "$dir/build-times"
  # Layers are content-addressed: a blob another layout of this cache already holds (the base, the JRE, the
  # PySpark venv, unchanged from build to build) becomes a hard link to it, so each new layout costs only
  # the layers that changed.
  for blob in "$layout"/blobs/sha256/*; do
    for other in "$cache"/images-*/oci/blobs/sha256/"${blob##*/}"; do
      if [ "$other" != "$blob" ] && [ -f "$other" ] && ! [ "$other" -ef "$blob" ]; then
        ln -f "$other" "$blob"; break
      fi
    done
  done
  touch "$dir/.complete"
else
  log "using $layout (built before: $(tr '\n' ';' < "$dir/build-times"))"
fi

# shellcheck source=scripts/bootstrap.d/lib/cache.sh
source "$repo/scripts/bootstrap.d/lib/cache.sh"
prune_cache_entries "$cache" images "$dir"   # under the build lock: no other bootstrap is building one
prune_unnamed_images "${S[@]}"

mkdir -p "$cache/env.d"
cat > "$cache/env.d/images.sh" <<ENV
export BOOKIE_FLEET_IMAGES="$layout"
ENV
