#!/usr/bin/env bash
# Install dgrag into ./.venv. torch is installed first, pinned, so that pip takes the
# CPU build and never pulls a CUDA one; then the project with its pinned set.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test]"
