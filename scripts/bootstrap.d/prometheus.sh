#!/usr/bin/env bash
# Debian's Prometheus server, for the tests that scrape a mixed fleet and evaluate the dashboards' and alert
# rules' PromQL against it (tests/metrics). Installed only when /usr/bin/prometheus is missing; needs root.
# The tests run it as a plain process with their own config and data directory: the Debian service is
# stopped and disabled so that nothing else listens on its port.
set -euo pipefail
log() { printf '[bootstrap prometheus] %s\n' "$*" >&2; }
if [ -x /usr/bin/prometheus ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  log "Prometheus is missing and this is not root: run 'apt-get install -y prometheus' (tests/metrics needs it)"
  exit 0
fi
log "installing Debian's prometheus"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 || log "apt-get update failed; trying the install with the current package lists"
# policy-rc.d 101: the package's postinst must not start the service (no init system here, and the tests
# start their own server).
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && created_policy=1
fi
apt-get install -y -qq --no-install-recommends prometheus >&2 || status=$?
[ "$created_policy" = 1 ] && rm -f "$policy"
[ "${status:-0}" = 0 ] || exit "$status"
/usr/bin/prometheus --version >&2
