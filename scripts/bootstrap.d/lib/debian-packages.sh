# Debian packages a bootstrap part needs (sourced; the caller defines log()). Needs root, as on CI and the
# development machines; elsewhere it says what to run and returns 1, and the caller decides what that costs.
# A failed install ends the bootstrap (exit), also where the caller tests the return value. No package's
# service is started by the install (policy-rc.d 101): there is no init system here, and the tests start their
# own servers (Prometheus, for one) with their own configuration.
# Usage: install_debian_packages [--with-recommends] "<what does not work without them>" package...
# (--with-recommends: the packages' Recommends too, for tools whose defaults rely on them.)
install_debian_packages() {
  local recommends=--no-install-recommends
  if [ "$1" = --with-recommends ]; then recommends=""; shift; fi
  local without="$1" policy=/usr/sbin/policy-rc.d created_policy=0 status=0
  shift
  if [ "$(id -u)" != 0 ]; then
    log "missing $* and this is not root: run 'apt-get install -y $*' ($without)"
    return 1
  fi
  log "installing Debian's $*"
  export DEBIAN_FRONTEND=noninteractive
  # One install at a time: two bootstraps (of two caches, or the playground's beside a test run) may want packages
  # at once, and dpkg refuses a second apt-get while one holds its lock instead of waiting.
  exec 6>/var/lock/bookie-fleet-apt.lock
  flock 6
  apt-get update -qq >&2 || log "apt-get update failed; trying the install with the current package lists"
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && created_policy=1
  fi
  # shellcheck disable=SC2086  # an empty option is no word
  apt-get install -y -qq $recommends "$@" >&2 || status=$?
  if [ "$created_policy" = 1 ]; then rm -f "$policy"; fi
  flock -u 6; exec 6>&-
  if [ "$status" != 0 ]; then log "apt-get install $* failed"; exit 1; fi
}
