#!/usr/bin/env bash
# Debian's Prometheus server, for the tests that scrape a mixed fleet and evaluate the dashboards' and alert
# rules' PromQL against it (tests/metrics). Installed only when /usr/bin/prometheus is missing; needs root.
# The tests run it as a plain process with their own config and data directory (the package's service is
# never started, see lib/debian-packages.sh), so nothing else listens on its port.
set -euo pipefail
log() { printf '[bootstrap prometheus] %s\n' "$*" >&2; }
# shellcheck source=scripts/bootstrap.d/lib/debian-packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-packages.sh"
if [ -x /usr/bin/prometheus ]; then
  exit 0
fi
install_debian_packages "tests/metrics needs it" prometheus || exit 0
/usr/bin/prometheus --version >&2
