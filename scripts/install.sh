#!/usr/bin/env bash
# Install dgrag into ./.venv for development and the whole test suite: the default set, the
# torch-based backends (the `models` extra), the ANN library (the `ann` extra: faiss-cpu, so the
# approximate fact route's tests run) and the test tools. torch is installed first,
# pinned, so that pip takes the CPU build and never pulls a CUDA one. On an ordinary machine,
# give pip PyTorch's CPU wheel index for that step (see the README, "Install"), e.g.
#   TORCH_INDEX_URL=<PyTorch's CPU wheel index> bash scripts/install.sh
# The default install (`pip install .`) needs no torch at all.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ -n "${TORCH_INDEX_URL:-}" ]; then
  .venv/bin/python -m pip install -q "torch==2.13.0" --index-url "$TORCH_INDEX_URL"
else
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
.venv/bin/python -m pip install -q -e ".[models,ann,test]"
