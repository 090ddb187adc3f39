"""Backends (embedders, rerankers, LLM): small interfaces, each module imported lazily."""
from __future__ import annotations

import importlib
from typing import Any

from ..errors import BackendError


def load_local_model(module: str, cls: str, path: str, package: str, **kwargs: Any) -> Any:
    """`module.cls(path, **kwargs)` from a local model folder, or a BackendError that says
    which package is missing or why the folder did not load."""
    try:
        factory = getattr(importlib.import_module(module), cls)
    except ImportError as exc:
        raise BackendError(f"{cls} needs `pip install {package}` (the torch-based backends: "
                           "`pip install 'dgrag[models]'`, torch from PyTorch's CPU wheel index first)") from exc
    try:
        return factory(path, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any loader failure is the same message to a user
        raise BackendError(f"cannot load {cls} from {path}: {exc}") from exc
