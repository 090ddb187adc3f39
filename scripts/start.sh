#!/usr/bin/env bash
# Install the default set into ./.venv (offline models, no torch: nothing CUDA on any machine),
# then start the app on the demo index (built from data/arkui-x-docs on first start).
# The torch-based backends and the test tools come with scripts/install.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False
exec .venv/bin/python app.py "$@"
