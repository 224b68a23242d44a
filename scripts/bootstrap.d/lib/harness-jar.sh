# Sourced by the bootstrap parts that compile a Java launcher: its classes packed into a jar as well, because a JVM
# maps archived classes (class-data sharing, fleet/bookie_fleet/jvm_archives.py) only when its classpath holds jars
# alone, and the tests start these launchers by the hundred.
#
#   pack_harness_jar <directory of classes> <jar>     (nothing to do when the jar exists)
pack_harness_jar() {
  local classes="$1" jar="$2"
  [ -f "$jar" ] && return 0
  # written outside the directory it packs (a jar may live in it), then moved in whole
  jar cf "$classes.jar.$$.writing" -C "$classes" . && mv "$classes.jar.$$.writing" "$jar"
}
