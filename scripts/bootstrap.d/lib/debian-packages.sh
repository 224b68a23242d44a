# Debian packages a bootstrap part needs (sourced; the caller defines log()). Needs root, as on CI and the
# development machines; elsewhere it says what to run and returns 1, and the caller decides what that costs.
# A failed install ends the bootstrap (exit), also where the caller tests the return value.
# Usage: install_debian_packages "<what does not work without them>" package...
install_debian_packages() {
  local without="$1"
  shift
  if [ "$(id -u)" != 0 ]; then
    log "missing $* and this is not root: run 'apt-get install -y $*' ($without)"
    return 1
  fi
  log "installing Debian's $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || log "apt-get update failed; trying the install with the current package lists"
  apt-get install -y -qq --no-install-recommends "$@" >&2 || { log "apt-get install $* failed"; exit 1; }
}
