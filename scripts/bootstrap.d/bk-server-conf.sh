#!/usr/bin/env bash
# Apache BookKeeper's own bk_server.conf, for the test that reads it without loss (tests/bookie/
# test_config_properties.py). The distribution tarball (with conf/bk_server.conf) is not published on Maven
# Central; the bk_server.conf that is, ships in bookkeeper-server's test jar. Writes
# $BOOKIE_FLEET_CACHE/env.d/bk-server-conf.sh, which scripts/bootstrap appends to the env file it prints.
set -euo pipefail
cache="${BOOKIE_FLEET_CACHE:-$HOME/.cache/bookie-fleet}"
version=4.17.3
dir="$cache/bookkeeper-conf-$version"
log() { printf '[bootstrap bk_server.conf] %s\n' "$*" >&2; }
command -v mvn >/dev/null 2>&1 || { log "missing 'mvn' (Debian: apt-get install maven)"; exit 1; }
mkdir -p "$cache"
if [ ! -f "$dir/.complete" ]; then
  log "fetching org.apache.bookkeeper:bookkeeper-server:$version:tests from Maven Central into $dir"
  rm -rf "$dir"; mkdir -p "$dir"
  (cd "$dir" && mvn -q -B dependency:copy -Dartifact="org.apache.bookkeeper:bookkeeper-server:$version:jar:tests" \
      -DoutputDirectory="$dir") >&2
  (cd "$dir" && python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("bk_server.conf"))' \
      "bookkeeper-server-$version-tests.jar" > bk_server.conf)
  touch "$dir/.complete"
fi
mkdir -p "$cache/env.d"
echo "export BOOKIE_FLEET_BK_SERVER_CONF=\"$dir/bk_server.conf\"" > "$cache/env.d/bk-server-conf.sh"
