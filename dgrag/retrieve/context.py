"""Result references and the merged Markdown context (breadcrumb, source URL, node ID per item)."""
from __future__ import annotations

from typing import Mapping

from ..config import Settings
from ..core import SECTION_OF, Reference
from ..store import NodeRows
from .loaded import LoadedIndex

TITLE = {"chunks": "Relevant document paragraph", "codes": "Relevant code block",
         "tables": "Relevant table", "images": "Relevant image"}
MAX_CHUNK_CHARS = 2500


def build_references(rows: NodeRows, li: LoadedIndex, finals: dict[str, list[tuple[int, float]]],
                     paths: Mapping[int, list[int]],
                     why: Mapping[int, Mapping] | None = None) -> dict[str, list[Reference]]:
    """Per section, the final (graph index, score) pairs as references, in order, each with
    what ranked it where `why` (by graph index) has it; a node deleted by a writer since the
    snapshot was loaded is left out."""
    out: dict[str, list[Reference]] = {}
    why = why or {}
    for kind, ranked in finals.items():
        rowids = [int(li.rowids[i]) for i, _ in ranked]
        nodes = rows.get(rowids)
        out[SECTION_OF[kind]] = [_reference(nodes[rowid], score, tuple(str(li.rowids[p]) for p in paths.get(idx, ())),
                                            why.get(idx))
                                 for (idx, score), rowid in zip(ranked, rowids) if rowid in nodes]
    return out


def _reference(n: dict, score: float, path_rowids: tuple[str, ...], why: Mapping | None = None) -> Reference:
    meta = n["meta"]
    image = None
    if n["type"] == "image":
        image = {"sha": meta.get("sha"), "width": meta.get("width"), "height": meta.get("height"),
                 "alt": meta.get("alt", ""), "page": meta.get("page")}
    return Reference(
        id=n["id"], type=n["type"], score=round(float(score), 5), breadcrumb=n["breadcrumb"],
        source_url=n["source_url"], source_path=n["source_path"], line_start=n["line_start"],
        line_end=n["line_end"], language=n["language"], summary=n.get("summary") or "",
        text=n["text"][:MAX_CHUNK_CHARS] if n["type"] == "chunk" else n["text"],
        corpus_idx=meta.get("corpus_idx"),
        code_language=meta.get("code_language", "") if n["type"] == "code" else None,
        image=image, graph_path_rowids=path_rowids, why=why)


def merge_context(refs: Mapping[str, list[Reference]], settings: Settings) -> str:
    """The seed's merged Markdown: one section per reference, directly displayable."""
    parts = []
    for section, title in TITLE.items():
        for i, r in enumerate(refs.get(section, []), 1):
            head = f"# {title} {i}\n- ID: {r.id}\n- File: {r.source_url}\n- Location: {r.breadcrumb}\n"
            parts.append(head + "\n" + r.body_markdown())
    return "\n\n".join(parts)
