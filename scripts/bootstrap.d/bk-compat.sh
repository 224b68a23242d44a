#!/usr/bin/env bash
# The second Apache BookKeeper version of the compatibility matrix (docs/compatibility.md): hack/maven/pom.xml's
# classpath at that version, and the Java client harness (tests/java) compiled against it. The compatibility
# tests (tests/compat) run their mixed-ensemble and Java client cases on both versions; every other test runs
# the pom's own. The classpath is resolved through that version's own dependency management (the pom's
# bookkeeper-managed profile), as the Java bookie image's is: one Netty line, the image's. Writes
# $BOOKIE_FLEET_CACHE/env.d/bk-compat.sh (BOOKIE_FLEET_BK_COMPAT_VERSION, _LIB and _HARNESS), which
# scripts/bootstrap appends to the env file it prints. Run by scripts/bootstrap.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${BOOKIE_FLEET_CACHE:-$HOME/.cache/bookie-fleet}"
version=4.18.0
benchmark_version=4.17.3  # see hack/maven/pom.xml: no bookkeeper-benchmark 4.18.0
profile=bookkeeper-managed
log() { printf '[bootstrap bk-compat] %s\n' "$*" >&2; }
for tool in mvn javac; do
  command -v "$tool" >/dev/null 2>&1 || { log "missing $tool (Debian: apt-get install maven openjdk-17-jdk-headless)"; exit 1; }
done
key="$({ cat "$repo/hack/maven/pom.xml" "$repo"/tests/java/*.java; echo "$version $benchmark_version $profile"; } \
  | sha256sum | cut -c1-12)"
dir="$cache/bookkeeper-$version-$key"
mkdir -p "$cache"
exec {lock}>"$cache/.bk-compat-build.lock"   # one build at a time (another checkout may bootstrap concurrently)
flock "$lock"
if [ ! -f "$dir/.complete" ]; then
  log "assembling Apache BookKeeper $version's classpath and the Java harness into $dir"
  rm -rf "$dir"; mkdir -p "$dir/lib" "$dir/harness"
  (cd "$repo/hack/maven" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -P "$profile" \
      -Dbookkeeper.version="$version" -Dbookkeeper.benchmark.version="$benchmark_version" \
      -DoutputDirectory="$dir/lib") >&2
  javac -nowarn -d "$dir/harness" -cp "$dir/lib/*" "$repo"/tests/java/*.java 2>&1 | grep -v '^Note:' >&2 || true
  [ -f "$dir/harness/ClientHarness.class" ] || { log "compiling tests/java against $version failed"; exit 1; }
  touch "$dir/.complete"
fi
# shellcheck source=scripts/bootstrap.d/lib/harness-jar.sh
source "$repo/scripts/bootstrap.d/lib/harness-jar.sh"
pack_harness_jar "$dir/harness" "$dir/harness/harness.jar"
exec {lock}>&-
mkdir -p "$cache/env.d"
printf 'export BOOKIE_FLEET_BK_COMPAT_VERSION="%s"\nexport BOOKIE_FLEET_BK_COMPAT_LIB="%s"\nexport BOOKIE_FLEET_BK_COMPAT_HARNESS="%s"\n' \
  "$version" "$dir/lib" "$dir/harness" > "$cache/env.d/bk-compat.sh"
