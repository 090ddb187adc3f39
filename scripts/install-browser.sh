#!/usr/bin/env bash
# Debian's Chromium for the end-to-end UI test (Playwright drives it; no browser download).
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null
  else
    echo "install Debian's chromium (apt-get install chromium) to run the browser test" >&2
  fi
fi
