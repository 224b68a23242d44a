#!/usr/bin/env bash
# Hadoop's MiniDFSCluster for the storage audit's HDFS tests (tests/support/hdfs.py): the jars of
# hack/hadoop/pom.xml from Maven Central, and the launcher hack/hadoop/MiniHdfs.java compiled against them,
# cached under a key of both. Writes $BOOKIE_FLEET_CACHE/env.d/hadoop.sh, which scripts/bootstrap appends to
# the env file it prints. Run by scripts/bootstrap; can also be run alone.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${BOOKIE_FLEET_CACHE:-$HOME/.cache/bookie-fleet}"
log() { printf '[bootstrap hadoop] %s\n' "$*" >&2; }
for tool in mvn javac; do
  command -v "$tool" >/dev/null 2>&1 || { log "missing '$tool' (Debian: apt-get install maven openjdk-17-jdk-headless)"; exit 1; }
done

src="$repo/hack/hadoop"
key="$(cat "$src/pom.xml" "$src/MiniHdfs.java" | sha256sum | cut -c1-12)"
dir="$cache/hadoop-$key"
mkdir -p "$cache"
exec 7>"$cache/.hadoop-build.lock"   # one build at a time (another checkout may bootstrap concurrently)
flock 7
if [ ! -f "$dir/.complete" ]; then
  log "assembling Hadoop's MiniDFSCluster classpath and launcher into $dir"
  rm -rf "$dir"; mkdir -p "$dir/lib" "$dir/classes"
  (cd "$src" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir/lib") >&2
  javac -nowarn -d "$dir/classes" -cp "$dir/lib/*" "$src/MiniHdfs.java" 2>&1 | grep -v '^Note:' >&2 || true
  [ -f "$dir/classes/MiniHdfs.class" ] || { log "compiling $src/MiniHdfs.java failed"; exit 1; }
  touch "$dir/.complete"
fi

mkdir -p "$cache/env.d"
cat > "$cache/env.d/hadoop.sh" <<ENV
export BOOKIE_FLEET_HADOOP_LIB="$dir/lib"
export BOOKIE_FLEET_HADOOP_CLASSES="$dir/classes"
ENV
