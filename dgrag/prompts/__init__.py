"""LLM prompts, kept as data files next to this module: `<name>_en.txt` / `<name>_zh.txt`.

Prompts use `str.format` placeholders (`{text}`, `{breadcrumb}`, ...); literal braces in the
JSON examples are written `{{` `}}`.

    load_prompt("openie", "zh")                 # the raw template of openie_zh.txt
    render("summary", "en", kind="code", breadcrumb="A / B", text="...")
"""
from __future__ import annotations

import re
import string
from functools import lru_cache
from importlib import resources

__all__ = ["load_prompt", "render", "placeholders", "available_prompts"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _suffix(language: str | None) -> str:
    return "zh" if (language or "").strip().lower().startswith("zh") else "en"


def available_prompts() -> list[str]:
    """Names of the prompt files shipped with the package, such as 'openie_en'."""
    return sorted(p.name[:-4] for p in resources.files(__name__).iterdir() if p.name.endswith(".txt"))


@lru_cache(maxsize=None)
def _read(filename: str) -> str:
    res = resources.files(__name__).joinpath(filename)
    if not res.is_file():
        raise FileNotFoundError(
            f"prompt file {filename!r} not found in the dgrag.prompts package "
            f"(available: {', '.join(available_prompts()) or 'none'})")
    return res.read_text(encoding="utf-8")


def load_prompt(name: str, language: str) -> str:
    """The template `<name>_zh.txt` for language "zh" (or "zh-cn", ...), else `<name>_en.txt`.
    Raises FileNotFoundError when no such prompt ships with the package."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise FileNotFoundError(f"invalid prompt name {name!r}: expected a name such as 'summary' or 'openie'")
    return _read(f"{name}_{_suffix(language)}.txt")


def placeholders(name: str, language: str) -> set[str]:
    """The `{field}` names a prompt expects."""
    return {f for _, f, _, _ in string.Formatter().parse(load_prompt(name, language)) if f}


def render(name: str, language: str, **fields) -> str:
    """The prompt with its placeholders filled (extra fields are ignored). Raises KeyError
    naming the missing fields when a placeholder is not given."""
    template = load_prompt(name, language)
    missing = sorted(f for _, f, _, _ in string.Formatter().parse(template) if f and f not in fields)
    if missing:
        raise KeyError(f"prompt {name}_{_suffix(language)} needs field(s) {', '.join(missing)}")
    return template.format(**fields)
