# Sourced by the bootstrap parts that need a Java component from Maven Central: the jars of a hack/<name>/pom.xml
# and one Java launcher compiled against them, cached under a key of both, built by one checkout at a time.
#
#   assemble_maven_harness <name> <Main.java> <ENV_PREFIX> [<variant> <mvn -Dproperty=value>...]
#
# caches $cache/<name>-<key>/{lib,classes,harness.jar} and writes $cache/env.d/<name>.sh exporting
# <ENV_PREFIX>_LIB, <ENV_PREFIX>_CLASSES and <ENV_PREFIX>_HARNESS_JAR (the classes as a jar), which
# scripts/bootstrap appends to the env file it prints.
# A variant (another version of the same pom, by its properties) is cached apart and written to
# $cache/env.d/<name>-<variant>.sh.
# shellcheck source=scripts/bootstrap.d/lib/harness-jar.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness-jar.sh"

assemble_maven_harness() {
  local name="$1" main="$2" prefix="$3" variant="${4:-}"
  local -a properties=("${@:5}")
  local repo cache src key dir lock env_name="$1"
  [ -z "$variant" ] || env_name="$name-$variant"
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
  cache="${BOOKIE_FLEET_CACHE:-$HOME/.cache/bookie-fleet}"
  for tool in mvn javac; do
    command -v "$tool" >/dev/null 2>&1 || {
      printf '[bootstrap %s] missing %s (Debian: apt-get install maven openjdk-17-jdk-headless)\n' "$name" "$tool" >&2
      return 1
    }
  done
  src="$repo/hack/$name"
  key="$({ cat "$src/pom.xml" "$src/$main"; [ -z "$variant" ] || printf '%s\n' "${properties[@]}"; } | sha256sum | cut -c1-12)"
  dir="$cache/$name-$key"
  mkdir -p "$cache"
  exec {lock}>"$cache/.$name-build.lock"   # one build at a time (another checkout may bootstrap concurrently)
  flock "$lock"
  if [ ! -f "$dir/.complete" ]; then
    printf '[bootstrap %s] assembling the classpath of %s and %s into %s\n' "$name" "$src/pom.xml" "$main" "$dir" >&2
    rm -rf "$dir"; mkdir -p "$dir/lib" "$dir/classes"
    (cd "$src" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime "${properties[@]}" \
        -DoutputDirectory="$dir/lib") >&2
    javac -nowarn -d "$dir/classes" -cp "$dir/lib/*" "$src/$main" 2>&1 | grep -v '^Note:' >&2 || true
    [ -f "$dir/classes/${main%.java}.class" ] || {
      printf '[bootstrap %s] compiling %s failed\n' "$name" "$src/$main" >&2
      return 1
    }
    touch "$dir/.complete"
  fi
  pack_harness_jar "$dir/classes" "$dir/harness.jar"   # lib/harness-jar.sh
  exec {lock}>&-
  mkdir -p "$cache/env.d"
  printf 'export %s_LIB="%s"\nexport %s_CLASSES="%s"\nexport %s_HARNESS_JAR="%s"\n' "$prefix" "$dir/lib" \
    "$prefix" "$dir/classes" "$prefix" "$dir/harness.jar" > "$cache/env.d/$env_name.sh"
}
