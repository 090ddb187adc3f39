"""Result items and the merged Markdown context (breadcrumb, source URL, node ID per item)."""
from __future__ import annotations

from ..config import Settings
from ..store import Store
from .loaded import LoadedIndex

SECTION = {"chunk": ("chunks", "Relevant document paragraph"), "code": ("codes", "Relevant code block"),
           "table": ("tables", "Relevant table"), "image": ("images", "Relevant image")}
MAX_CHUNK_CHARS = 2500


def build_items(store: Store, li: LoadedIndex, finals: dict[str, list[tuple[int, float]]],
                paths: dict[int, list[int]]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for kind, ranked in finals.items():
        rowids = [int(li.rowids[i]) for i, _ in ranked]
        nodes = {n["rowid"]: n for n in store.nodes_by_rowids(rowids)}
        items = []
        for (idx, score), rowid in zip(ranked, rowids):
            n = nodes.get(rowid)
            if n is None:  # deleted by a writer since the snapshot was loaded
                continue
            items.append(_item(n, score, [str(li.rowids[p]) for p in paths.get(idx, [])], li))
        out[SECTION[kind][0]] = items
    return out


def _item(n: dict, score: float, path_rowids: list[str], li: LoadedIndex) -> dict:
    meta = n["meta"]
    item = {"id": n["id"], "type": n["type"], "score": round(float(score), 5), "breadcrumb": n["breadcrumb"],
            "source_url": n["source_url"], "source_path": n["source_path"], "line_start": n["line_start"],
            "line_end": n["line_end"], "language": n["language"], "summary": n.get("summary") or "",
            "text": n["text"][:MAX_CHUNK_CHARS] if n["type"] == "chunk" else n["text"]}
    if "corpus_idx" in meta:
        item["corpus_idx"] = meta["corpus_idx"]
    if n["type"] == "code":
        item["code_language"] = meta.get("code_language", "")
    if n["type"] == "image":
        item.update(image_sha=meta.get("sha"), width=meta.get("width"), height=meta.get("height"),
                    alt=meta.get("alt", ""), page=meta.get("page"), image_url=f"/images/{meta.get('sha')}")
    if path_rowids:
        item["graph_path_rowids"] = path_rowids
    return item


def merge_context(items: dict[str, list[dict]], settings: Settings) -> str:
    """The seed's merged Markdown: one section per item, directly displayable."""
    parts = []
    for kind in ("chunk", "code", "table", "image"):
        key, title = SECTION[kind]
        for i, it in enumerate(items.get(key, []), 1):
            head = (f"# {title} {i}\n- ID: {it['id']}\n- File: {it['source_url']}\n"
                    f"- Location: {it['breadcrumb']}\n")
            parts.append(head + "\n" + _body(it))
    return "\n\n".join(parts)


def _body(it: dict) -> str:
    if it["type"] == "code":
        fence = "````" if "```" in it["text"] else "```"
        return f"{fence}{it.get('code_language', '')}\n{it['text']}\n{fence}"
    if it["type"] == "image":
        caption = (it.get("summary") or it.get("alt") or "image").replace("\n", " ")[:200]
        return f"![{_escape_alt(caption)}]({it['image_url']})\n\n{caption}"
    return it["text"]


def _escape_alt(text: str) -> str:
    return text.replace("[", "(").replace("]", ")")
