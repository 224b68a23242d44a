#!/usr/bin/env bash
# Debian's Chromium, for the headless screenshot of the storage audit's HTML report (tests/pipeline).
# Installed only when /usr/bin/chromium is missing; needs root (CI and the dev machines run as root).
# A test tool's own browser download (npx playwright install, puppeteer) does not work on these machines.
set -euo pipefail
log() { printf '[bootstrap chromium] %s\n' "$*" >&2; }
# shellcheck source=scripts/bootstrap.d/lib/debian-packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian-packages.sh"
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
install_debian_packages "the report screenshot tests need it" chromium || exit 0
/usr/bin/chromium --version >&2
