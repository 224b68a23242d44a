# The Go build flags every Go tool of the project is built with (sourced by scripts/bootstrap.d/*.sh).
#   -trimpath, -buildvcs=false: the same binary whatever the checkout's path or state (the caches are keyed by
#     what the binaries are built from, not where).
#   -gcflags=all=-dwarf=false: no debug information is generated while compiling. The binaries are linked with
#     -ldflags=-s -w, which drops it anyway; not generating it takes about a tenth less CPU for the same
#     binaries (measured on CoreDNS with an empty build cache: 118 against 133 CPU-seconds), and stack traces
#     need none of it.
# shellcheck disable=SC2034  # used by the scripts that source this file
go_build_flags="-trimpath -buildvcs=false -gcflags=all=-dwarf=false"

# The compiler's own garbage collector. A compile is a short process that allocates far more than it keeps, so the
# Go builds here run it with the collector off up to a soft memory limit (GOGC=off GOMEMLIMIT=...), at which it
# collects as usual: the same binaries, byte for byte (the build cache does not key on these), for less CPU.
# Measured on the control plane's build (hack/kube's five binaries, an empty build cache, an idle 2-core machine),
# two pairs: 729 CPU-seconds in 384 s at Go's defaults against 643 in 336 s with GOGC=off GOMEMLIMIT=3GiB, then
# 623 in 322 s against 599 in 317 s (12% and 4% less; the defaults alone differed by 15% between the pairs, so
# the gain is about the host's own spread, but always the same way: less user CPU, a little more system CPU for
# the fresh pages). The largest process peaked at 1.5 and 1.7 GB. The go command runs a compile per core at once,
# so each gets the machine's memory divided by four times its cores (all of them together a quarter of it), at most
# 3 GiB; below 512 MiB each, the collector keeps Go's defaults. A GOGC or GOMEMLIMIT of the user's own wins.
go_compiler_memory_limit_mib() {  # go_compiler_memory_limit_mib <memory KiB> <cores>: the limit, or nothing
  local mib=$(( $1 / 1024 / 4 / $2 ))
  [ "$mib" -gt 3072 ] && mib=3072
  [ "$mib" -ge 512 ] && echo "$mib"
  return 0
}
if [ -z "${GOGC:-}${GOMEMLIMIT:-}" ]; then
  go_limit_mib="$(go_compiler_memory_limit_mib "$(awk '$1 == "MemTotal:" {print $2}' /proc/meminfo)" "$(nproc)")"
  if [ -n "$go_limit_mib" ]; then export GOGC=off GOMEMLIMIT="${go_limit_mib}MiB"; fi
fi
