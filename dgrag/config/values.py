"""Reading a setting's value from text (an environment variable, JSON, a CLI flag)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError


def short(key: Any) -> str:
    """A key as a message quotes it: at most 60 characters."""
    text = repr(key)
    return text if len(text) <= 60 else text[:57] + "..."


def coerce(value: Any, type_name: Any, key: str) -> Any:
    """Turn a string (env var, JSON) into the field's declared type."""
    t = str(type_name)
    try:
        if t.startswith("bool"):
            if isinstance(value, bool):
                return value
            if str(value).strip().lower() in ("1", "true", "yes", "on"):
                return True
            if str(value).strip().lower() in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(value)
        if t.startswith("int"):
            if isinstance(value, bool):
                raise ValueError(value)
            return int(value)
        if t.startswith("float"):
            return float(value)
        if "Path" in t:
            return Path(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: cannot read {value!r} as {t}") from None
    return value if isinstance(value, str) or value is None else str(value)
