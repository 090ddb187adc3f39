"""The offline OpenIE's platform knowledge, in packs: data files under `packs/` (schema: packs/README.md).

`base` is always on (language-generic rules); a platform pack (openharmony, typescript, python,
rust, go, ...) adds the CLI programs, file types, field labels, unit words, page boilerplate and
signature patterns of its docs. `lexicon(names)` merges base and the named packs (and the packs
they require) into one `Lexicon`, the extractor's option. The English and Chinese word lists
(stop words, suffixes, ...) are language rules, not platform knowledge: they stay in openie_words/.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from ..errors import PackError
from .openie_lexicon import EN_STOP

PACKS_DIR = Path(__file__).with_name("packs")
BASE = "base"
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
WORD_KEYS = ("commands", "file_types", "field_labels", "skip_labels", "stop_words", "boilerplate", "signatures")
DETECT_KEYS = ("code", "extensions", "terms", "generators")
_TOP_KEYS = {"name", "description", "requires", "detect", "words"}


@dataclass(frozen=True)
class Pack:
    """One pack file as read: what it adds (`words`) and what in a corpus chooses it (`detect`)."""
    name: str
    description: str
    requires: tuple[str, ...] = ()
    detect: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def pack_names() -> list[str]:
    """Every pack shipped, base first."""
    names = sorted(p.stem for p in PACKS_DIR.glob("*.toml"))
    return [BASE] + [n for n in names if n != BASE]


def _strings(value, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise PackError(f"{where}: expected a list of non-empty strings")
    return tuple(v.strip() for v in value)


def _table(data: dict, key: str, allowed: tuple[str, ...], where: str) -> dict[str, tuple[str, ...]]:
    table = data.get(key, {})
    if not isinstance(table, dict):
        raise PackError(f"{where}: [{key}] must be a table")
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise PackError(f"{where}: unknown key {key}.{unknown[0]} (known: {', '.join(allowed)})")
    return {k: _strings(v, f"{where}: {key}.{k}") for k, v in table.items()}


def parse_pack(text: str, where: str) -> Pack:
    """A pack from its TOML text; PackError names the file and the key that is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PackError(f"{where}: not valid TOML ({e})") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise PackError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_TOP_KEYS))})")
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise PackError(f"{where}: 'name' must be a lowercase word (a-z, 0-9, -)")
    words = _table(data, "words", WORD_KEYS, where)
    for key in ("boilerplate", "signatures"):
        for pattern in words.get(key, ()):
            try:
                compiled = re.compile(pattern)
            except re.error as e:
                raise PackError(f"{where}: words.{key}: bad regular expression {pattern[:40]!r} ({e})") from None
            if key == "signatures" and not {"name", "args"} <= set(compiled.groupindex):
                raise PackError(f"{where}: words.signatures: a pattern needs the groups (?P<name>) and (?P<args>)")
    return Pack(name=name, description=str(data.get("description", "")),
                requires=_strings(data.get("requires", []), f"{where}: requires"),
                detect=MappingProxyType(_table(data, "detect", DETECT_KEYS, where)), words=MappingProxyType(words))


@lru_cache(maxsize=None)
def load_pack(name: str) -> Pack:
    """The shipped pack `name`; PackError when there is none or its file is malformed."""
    if not _NAME.match(name or ""):
        raise PackError(f"unknown OpenIE pack {name!r} (packs: {', '.join(pack_names())})")
    path = PACKS_DIR / f"{name}.toml"
    if not path.is_file():
        raise PackError(f"unknown OpenIE pack {name!r} (packs: {', '.join(pack_names())})")
    pack = parse_pack(path.read_text(encoding="utf-8"), path.name)
    if pack.name != name:
        raise PackError(f"{path.name}: its name is {pack.name!r}, not {name!r}")
    return pack


def resolve(names) -> tuple[str, ...]:
    """base, then the named packs and those they require, each once, in a fixed (sorted) order."""
    seen: set[str] = set()
    todo = [n.strip() for n in names if n and n.strip()]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(load_pack(name).requires)
    seen.discard(BASE)
    return (BASE,) + tuple(sorted(seen))


# --------------------------------------------------------------------------------------
# the merged knowledge the extractor reads
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lexicon:
    """Base plus platform packs, merged; with the extraction's two switches. Frozen: one per choice."""
    packs: tuple[str, ...]
    en_stop: frozenset[str]
    field_labels: frozenset[str]
    skip_labels: frozenset[str]
    cli: Mapping[str, frozenset[str] | None]        # program -> subcommands that make a command entity (None: any)
    command: re.Pattern | None
    file_ext: re.Pattern
    boilerplate: re.Pattern | None
    signatures: tuple[re.Pattern, ...]
    # True: the topic "mentions" every named thing, before the co-occurrences. False (only what relates
    # to nothing else) lost 1.4-3.6 points of R@5 on MuSiQue offline: a passage's title in its facts is
    # what the fact route matches (docs/benchmarks.md, "Offline OpenIE")
    topic_star: bool = True
    cooccur_window: int = 3                          # a named thing relates to the next this many in its sentence

    @property
    def key(self) -> str:
        """What the extraction's output depends on besides its input: a memo's key."""
        return f"{','.join(self.packs)};{int(self.topic_star)};{self.cooccur_window}"


def _merged(packs: list[Pack], key: str) -> list[str]:
    out: list[str] = []
    for p in packs:
        out += [w for w in p.words.get(key, ()) if w not in out]
    return out


def _cli(entries: list[str]) -> dict[str, frozenset[str] | None]:
    out: dict[str, frozenset[str] | None] = {}
    for ln in entries:
        prog, _, subs = ln.partition(":")
        prog, new = prog.strip(), (frozenset(subs.split()) if subs.strip() else None)
        old = out.get(prog, frozenset())
        out[prog] = None if new is None or (prog in out and old is None) else old | new
    return out


def _command_pattern(cli: Mapping) -> re.Pattern | None:
    if not cli:
        return None
    return re.compile(
        r"(?<![A-Za-z0-9_./-])(" + "|".join(re.escape(p) for p in sorted(cli, key=len, reverse=True)) + r")"
        r"((?:[ \t]+(?:--?[A-Za-z0-9_-]+|[a-z][A-Za-z0-9_.-]*)(?![A-Za-z0-9_.-])){1,3})")


@lru_cache(maxsize=64)
def lexicon(names: tuple[str, ...] = (), topic_star: bool = True, cooccur_window: int = 3) -> Lexicon:
    """Base plus the packs `names` (and what they require), merged."""
    from .openie_lexicon import normalize_entity   # the key every label set is compared in

    chosen = resolve(names)
    packs = [load_pack(n) for n in chosen]
    cli = _cli(_merged(packs, "commands"))
    boiler = _merged(packs, "boilerplate")
    exts = _merged(packs, "file_types")
    return Lexicon(
        packs=chosen, en_stop=EN_STOP | frozenset(w.lower() for w in _merged(packs, "stop_words")),
        field_labels=frozenset(normalize_entity(w) for w in _merged(packs, "field_labels")),
        skip_labels=frozenset(normalize_entity(w) for w in _merged(packs, "skip_labels")),
        cli=MappingProxyType(cli), command=_command_pattern(cli),
        file_ext=re.compile(r"\.(?:" + "|".join(re.escape(e) for e in exts) + r")$", re.I),
        boilerplate=re.compile("|".join(boiler)) if boiler else None,
        signatures=tuple(re.compile(s) for s in _merged(packs, "signatures")),
        topic_star=topic_star, cooccur_window=cooccur_window)


def all_words(names: tuple[str, ...] | None = None) -> set[str]:
    """Every plain word entry of the packs `names` and what they require (None: every pack):
    programs, file types, labels, units; for tools that must leave the extractor's vocabulary alone
    (bench/replicate.py)."""
    out: set[str] = set()
    for name in (pack_names() if names is None else resolve(names)):
        words = load_pack(name).words
        for key in ("commands", "file_types", "field_labels", "skip_labels", "stop_words"):
            for w in words.get(key, ()):
                parts = w.replace(":", " ").split() if key == "commands" else [w]
                out.update(p for p in parts if p != "FILE" and not p.startswith("-"))
    return out
