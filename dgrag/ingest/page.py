"""What parsing a page yields (`ParsedPage`, its `ImageRef`s) and the ids and hashes its nodes
carry; the parser itself is `markdown.parse_page`."""
from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field

import yaml

from ..kernels.tokens import IDEOGRAPH

_LATIN = re.compile(r"[A-Za-z]")


def load_front(mark: str, text: str) -> dict:
    """Front matter's data: TOML between `+++` lines (Hugo), else YAML; {} for anything but a
    mapping. ValueError (with the format's name) where it is not that format."""
    try:
        data = tomllib.loads(text) if mark == "+++" else yaml.safe_load(text)
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"front matter is not {'TOML' if mark == '+++' else 'YAML'}: {str(exc).splitlines()[0]}") \
            from None
    return data if isinstance(data, dict) else {}


@dataclass
class ImageRef:
    node_key: str          # placeholder id, replaced by the image node once the bytes are known
    chunk_id: str
    src: str               # as written in the page
    path: str | None       # resolved path relative to the docs root, None if remote / invalid
    alt: str
    line: int
    context: str


@dataclass
class ParsedPage:
    path: str
    title: str
    language: str
    nodes: list[dict] = field(default_factory=list)
    contains: list[tuple[str, str]] = field(default_factory=list)   # parent id -> child id
    links: list[tuple[str, str, str]] = field(default_factory=list)  # chunk id, target path, anchor
    images: list[ImageRef] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    front: dict = field(default_factory=dict)   # the front matter
    recognised: dict[str, int] = field(default_factory=dict)  # dialect constructs read, by kind


def node_id(kind: str, *parts: str) -> str:
    h = hashlib.md5("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{kind}-{h}"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def detect_language(text: str) -> str:
    cjk = len(IDEOGRAPH.findall(text[:20000]))
    latin = len(_LATIN.findall(text[:20000]))
    return "zh" if cjk and cjk * 3 >= latin * 0.2 + cjk else "en"
