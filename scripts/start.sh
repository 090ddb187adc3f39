#!/usr/bin/env bash
# Install, then start the app on the demo index (built from the bundled corpus on first start).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False
exec .venv/bin/python app.py "$@"
