# The Go build flags every Go tool of the project is built with (sourced by scripts/bootstrap.d/*.sh).
#   -trimpath, -buildvcs=false: the same binary whatever the checkout's path or state (the caches are keyed by
#     what the binaries are built from, not where).
#   -gcflags=all=-dwarf=false: no debug information is generated while compiling. The binaries are linked with
#     -ldflags=-s -w, which drops it anyway; not generating it takes about a tenth less CPU for the same
#     binaries (measured on CoreDNS with an empty build cache: 118 against 133 CPU-seconds), and stack traces
#     need none of it.
# shellcheck disable=SC2034  # used by the scripts that source this file
go_build_flags="-trimpath -buildvcs=false -gcflags=all=-dwarf=false"
