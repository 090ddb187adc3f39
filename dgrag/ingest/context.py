"""The text around a code block or table: `context_lines` lines before it and after it on its
page, joined by "…". It is the LLM summary's input and the extractive summary's lead.

It is not stored (schema 7 dropped it from `meta`: about 900 characters a node, a third of the
ArkUI-X file's node bytes). The parser hands it over with the node (`node["context"]`), and a node
read from the file gets it back from its page's chunks (`attach`): the chunks of a page cover
every line from its first heading or paragraph on, so the lines around a node are those
chunks' lines. A file from before schema 7 opened read-only still has it in `meta`, and that is
read as it is (`of`).
"""
from __future__ import annotations

from typing import Iterable, Sequence

DERIVED = ("code", "table")  # the node types whose context is derived, not stored


def around(lines: Sequence[str], start: int, end: int, n: int) -> str:
    """Lines [start - n, start) and [end, end + n) of a page (0-based, `end` exclusive)."""
    before = list(lines[max(0, start - n):start])
    after = list(lines[end:end + n])
    return "\n".join(before + ["…"] + after).strip()


def page_lines(chunks: Iterable[tuple[int, int, str]]) -> list[str]:
    """A page's lines as far as its chunks hold them: (line_start, line_end, text) rows, 1-based
    and inclusive. A chunk's text is its lines stripped, so blank lines at its end come back as
    blank lines; lines no chunk covers (before the first one) are blank."""
    out: list[str] = []
    for start, end, text in sorted(chunks):
        if start is None or end is None:
            continue
        own = (text or "").split("\n")[:max(0, end - start + 1)]
        if len(out) < end:
            out.extend([""] * (end - len(out)))
        out[start - 1:start - 1 + len(own)] = own
    return out


def of(node: dict) -> str:
    """A node's context: handed over by the parser, or stored in `meta` (files before schema 7
    and image nodes), or '' where `attach` has not given it one."""
    if "context" in node:
        return node["context"] or ""
    return (node.get("meta") or {}).get("context", "")


def attach(store, nodes: list[dict], n: int) -> None:
    """Give code and table nodes read from `store` their context (`node["context"]`), from the
    chunks of their page (one query a page)."""
    pages: dict[str, list[str]] = {}
    for node in nodes:
        if node.get("type") not in DERIVED or "context" in node or "context" in (node.get("meta") or {}):
            continue
        path, start, end = node.get("source_path"), node.get("line_start"), node.get("line_end")
        if path is None or start is None or end is None:
            node["context"] = ""
            continue
        if path not in pages:
            pages[path] = page_lines(store.nodes.page_chunks(path))
        node["context"] = around(pages[path], start - 1, end, n)
