# Running a command so that stopping the script stops it too (sourced by scripts/test and scripts/sanitize).
#
# A shell waiting for a command in the foreground runs its SIGTERM trap (or dies of the signal) only once the
# command has ended, and the command itself never hears of the signal: a pytest process would go on, its
# fixtures (bookies, ZooKeeper, a local Kubernetes) with it. Here the command runs in the background and the
# shell's SIGTERM (the test run's deadline, or the run stopped) goes on to it, so it tears its fixtures down.
# Usage: run_forwarding_sigterm <command> [args...]; returns the command's exit code
run_forwarding_sigterm() {
  local child rc
  "$@" &
  child=$!
  trap 'kill -TERM "$child" 2>/dev/null' TERM
  wait "$child" && rc=0 || rc=$?
  while kill -0 "$child" 2>/dev/null; do wait "$child" && rc=0 || rc=$?; done  # a trap ends "wait" early
  trap - TERM
  return "$rc"
}
