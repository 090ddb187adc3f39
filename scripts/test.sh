#!/usr/bin/env bash
# Install, then run the whole test suite (the same command CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
if [ -f scripts/install-browser.sh ]; then bash scripts/install-browser.sh; fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
