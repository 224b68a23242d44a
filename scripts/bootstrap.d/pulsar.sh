#!/usr/bin/env bash
# Apache Pulsar's broker and Java client for the Pulsar tests (tests/pulsar): the jars of hack/pulsar/pom.xml
# from Maven Central (about 300) and the client harness hack/pulsar/PulsarHarness.java compiled against them,
# cached under a key of both. Writes $BOOKIE_FLEET_CACHE/env.d/pulsar.sh, which scripts/bootstrap appends to
# the env file it prints. Run by scripts/bootstrap; can also be run alone.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${BOOKIE_FLEET_CACHE:-$HOME/.cache/bookie-fleet}"
log() { printf '[bootstrap pulsar] %s\n' "$*" >&2; }
for tool in mvn javac; do
  command -v "$tool" >/dev/null 2>&1 || { log "missing '$tool' (Debian: apt-get install maven openjdk-17-jdk-headless)"; exit 1; }
done

src="$repo/hack/pulsar"
key="$(cat "$src/pom.xml" "$src/PulsarHarness.java" | sha256sum | cut -c1-12)"
dir="$cache/pulsar-$key"
mkdir -p "$cache"
exec 6>"$cache/.pulsar-build.lock"   # one build at a time (another checkout may bootstrap concurrently)
flock 6
if [ ! -f "$dir/.complete" ]; then
  log "assembling Apache Pulsar's broker classpath and client harness into $dir"
  rm -rf "$dir"; mkdir -p "$dir/lib" "$dir/classes"
  (cd "$src" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir/lib") >&2
  javac -nowarn -d "$dir/classes" -cp "$dir/lib/*" "$src/PulsarHarness.java" 2>&1 | grep -v '^Note:' >&2 || true
  [ -f "$dir/classes/PulsarHarness.class" ] || { log "compiling $src/PulsarHarness.java failed"; exit 1; }
  touch "$dir/.complete"
fi

mkdir -p "$cache/env.d"
cat > "$cache/env.d/pulsar.sh" <<ENV
export BOOKIE_FLEET_PULSAR_LIB="$dir/lib"
export BOOKIE_FLEET_PULSAR_CLASSES="$dir/classes"
ENV
