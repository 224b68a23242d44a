#!/usr/bin/env bash
# Builds bootstrap parts one after the other (scripts/test runs it beside the tests) and records each as it ends:
# a line "<part> <exit code> <env files>..." appended to <status file>, the env files being those of
# $BOOKIE_FLEET_CACHE/env.d the part wrote (one part may write several: pulsar-lts writes pulsar-lts.sh and
# pulsar-perf.sh); when all are done, the shell's seconds at that point in "<status file>.seconds". The tests
# waiting for a part read these (tests/support/bootstrap_parts.py).
# Usage: parts-beside-tests.sh <status file> <part script>...
set -uo pipefail
built="$1"; shift
for part_script in "$@"; do
  touch "$built.started"
  code=0; bash "$part_script" || code=$?
  written="$(find "$BOOKIE_FLEET_CACHE/env.d" -maxdepth 1 -name '*.sh' -newer "$built.started" -printf '%f ' 2>/dev/null)"
  echo "$(basename "$part_script" .sh) $code $written" >> "$built"
done
echo "$SECONDS" > "$built.seconds"
