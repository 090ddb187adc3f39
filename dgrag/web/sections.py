"""What a coding agent reads: ranked sections (breadcrumb, source URL, the section's Markdown and
the code on it) within a token budget the caller sets, and one section or page in full by id.
The MCP tools return these; they are plain dicts, built from Retriever.search's references and
the store's rows.
"""
from __future__ import annotations

from typing import Any

from ..core import Reference, estimate_tokens
from ..errors import ConfigError
from .service import Service

MIN_TOKENS, MAX_TOKENS = 100, 20_000  # a caller's budget: enough for one section, bounded above
MAX_SECTIONS = 20


def check_budget(max_tokens: Any, sections: Any = 1) -> tuple[int, int]:
    for name, value, low, high in (("max_tokens", max_tokens, MIN_TOKENS, MAX_TOKENS),
                                   ("sections", sections, 1, MAX_SECTIONS)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(f"{name} must be an integer from {low} to {high}, not {value!r}")
    return max_tokens, sections


def search_sections(service: Service, query: str, max_tokens: int = 4000, sections: int = 5,
                    retrieval_config: dict | None = None) -> dict:
    """The best `sections` chunks for `query`, each with the code blocks and tables retrieved on
    its lines, cut to `max_tokens` in rank order (the first section is cut to fit, the rest are
    whole or left out)."""
    max_tokens, sections = check_budget(max_tokens, sections)
    overrides = {"final_chunk_k": sections, "final_code_k": sections, "final_table_k": sections,
                 "final_image_k": 0, **(retrieval_config or {})}
    query, config = service.admit(query, overrides)
    result = service.retriever.search(query, config)
    media = [*result.references["codes"], *result.references["tables"]]
    out, used, left_out = [], 0, 0
    for ref in result.chunks:
        section = _section(ref, [m for m in media if _on(m, ref)])
        cost = estimate_tokens(section["markdown"]) + sum(estimate_tokens(c["markdown"]) for c in section["code"])
        if used + cost > max_tokens:
            if out:
                left_out += 1
                continue
            section, cost = _cut(section, max_tokens)
        out.append(section)
        used += cost
    return {"query": str(query), "method": result.method, "sections": out, "tokens": used,
            "max_tokens": max_tokens, "left_out": left_out, "seconds": result.timing.get("rag_total")}


def _on(media: Reference, chunk: Reference) -> bool:
    """A code block or table lies on a section: the same page, within its lines."""
    return (media.source_path == chunk.source_path and None not in (media.line_start, chunk.line_start,
                                                                     chunk.line_end)
            and chunk.line_start <= media.line_start <= chunk.line_end)


def _section(ref: Reference, media: list[Reference]) -> dict:
    return {"id": ref.id, "type": ref.type, "score": ref.score, "breadcrumb": ref.breadcrumb,
            "source_url": ref.source_url, "source_path": ref.source_path,
            "lines": [ref.line_start, ref.line_end], "markdown": ref.body_markdown(),
            "code": [{"id": m.id, "type": m.type, "language": m.code_language or "", "markdown": m.body_markdown(),
                      "lines": [m.line_start, m.line_end]} for m in media]}


def _cut(section: dict, max_tokens: int) -> tuple[dict, int]:
    """The section with its Markdown cut to `max_tokens` and no code list (the code is in the
    Markdown, in its place)."""
    text = section["markdown"]
    keep = len(text)
    while keep > 0 and estimate_tokens(text[:keep]) > max_tokens:
        keep = int(keep * max_tokens / max(1, estimate_tokens(text[:keep]))) - 1
    cut = text[:max(keep, 0)]
    return {**section, "markdown": cut + ("\n\n[... cut to max_tokens]" if keep < len(text) else ""), "code": [],
            "truncated": keep < len(text)}, estimate_tokens(cut)


def read_node(service: Service, node_id: Any, max_tokens: int = 8000) -> dict:
    """One section (a chunk with its code blocks and tables) or one page (a file: its sections in
    order) in full, up to `max_tokens`."""
    from ..store import Store

    max_tokens, _ = check_budget(max_tokens)
    if not isinstance(node_id, str) or not 0 < len(node_id) <= 300:
        raise ConfigError("id must be a node id such as the `id` of a search result")
    service.ready()
    with Store(service.settings.db_path, readonly=True) as st:
        node = st.nodes.by_id(node_id)
        if node is None or node["type"] == "entity":
            raise ConfigError(f"no section or page with id {node_id[:80]!r} in this index")
        if node["type"] == "file":
            owned = st.nodes.by_rowids(r for r, _ in st.nodes.of_file(node["source_path"]).values())
        else:
            owned = [node]
    parts = sorted((n for n in owned if n["type"] == "chunk"), key=lambda n: (n["line_start"] or 0)) or owned
    markdown, cut = _join([n["text"] for n in parts], max_tokens)
    return {"id": node["id"], "type": node["type"], "breadcrumb": node["breadcrumb"], "source_url": node["source_url"],
            "source_path": node["source_path"], "lines": [node["line_start"], node["line_end"]],
            "sections": [n["id"] for n in parts], "markdown": markdown, "truncated": cut,
            "tokens": estimate_tokens(markdown)}


def _join(texts: list[str], max_tokens: int) -> tuple[str, bool]:
    out, used = [], 0
    for text in texts:
        cost = estimate_tokens(text)
        if used + cost > max_tokens:
            piece, _ = _cut({"markdown": text}, max_tokens - used) if max_tokens - used > 20 else ({"markdown": ""}, 0)
            if piece["markdown"]:
                out.append(piece["markdown"])
            return "\n\n".join(out), True
        out.append(text)
        used += cost
    return "\n\n".join(out), False
