#!/usr/bin/env bash
# Debian's Chromium, for the headless screenshot of the storage audit's HTML report (tests/pipeline).
# Installed only when /usr/bin/chromium is missing; needs root (CI and the dev machines run as root).
# A test tool's own browser download (npx playwright install, puppeteer) does not work on these machines.
set -euo pipefail
log() { printf '[bootstrap chromium] %s\n' "$*" >&2; }
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  log "Chromium is missing and this is not root: run 'apt-get install -y chromium' (report screenshot tests skip)"
  exit 0
fi
log "installing Debian's chromium"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 || log "apt-get update failed; trying the install with the current package lists"
apt-get install -y -qq --no-install-recommends chromium >&2
/usr/bin/chromium --version >&2
