"""What a node's vector stands for, and embedding what has no current vector.

Shared by indexing, enrichment and retrieval (a query reranks with the same texts), so it sits
below all three: it imports the store and nothing of theirs.
"""
from __future__ import annotations

import hashlib
from typing import Callable

import numpy as np

from .config import Settings
from .core import Node
from .store import Store

Progress = Callable[[str, int, int], None]
ENTITY_NAME_CHARS = 100


def embed_text(node: Node, max_chars: int = 384) -> str:
    """What gets embedded for a node (the seed's choice per type)."""
    t = node["type"]
    if t == "chunk":
        text = f"{node['breadcrumb']}\n{node.get('prose') or ''}"
        if node.get("summary_source") == "llm" and node.get("summary"):
            text = f"{node['summary']}\n{text}"
    elif t == "entity":
        # the name alone, as HippoRAG embeds entities: its vector is also the one synonymy
        # compares, so an entity is embedded once. "name: description" vectors cost 3x the
        # tokens and changed no ranking on MuSiQue or ArkUI-X (docs/benchmarks.md, "Indexing throughput").
        text = (node.get("entity_name") or node["text"])[:ENTITY_NAME_CHARS]
    else:
        text = node.get("summary") or node["text"]
    return text[:max_chars]


def embed_pending(store: Store, embedder, settings: Settings, progress: Progress | None = None,
                  kinds: tuple[str, ...] | None = None) -> int:
    """Embed every node (of `kinds`, or of every type) without a current vector, in committed
    batches (resumable).

    A text embedded before (same hash, same type: en/zh copies of one code block, a moved
    section) reuses its vector. Returns the number of texts the model actually embedded.
    """
    progress = progress or (lambda stage, done, total: None)
    pending = store.nodes.pending_embedding(kinds=kinds)
    if pending:
        with store.write_lock:  # a compact copy's is built here, before the first look-up
            store.nodes.ensure_hash_index()
    by_type: dict[str, list[dict]] = {}
    for _, kind, node in pending:
        by_type.setdefault(kind, []).append(node)
    done, total, embedded, bs = 0, len(pending), 0, max(1, settings.embedding_batch_size)
    for kind, nodes in by_type.items():
        limit = settings.embedding_max_chars_code_table if kind in ("code", "table") else settings.embedding_max_chars
        for i in range(0, len(nodes), bs):
            batch = nodes[i:i + bs]
            texts = [embed_text(n, limit) for n in batch]
            hashes = [text_hash(t) for t in texts]
            known = store.vectors.by_embed_hash(kind, hashes)
            todo = sorted({t for t, h in zip(texts, hashes) if h not in known}, key=len)  # less padding
            fresh = dict(zip(todo, embedder.embed_passages(todo))) if todo else {}
            vecs = np.stack([fresh[t] if t in fresh else known[h]
                             for t, h in zip(texts, hashes)])
            with store.transaction():
                store.vectors.put(kind, [n["rowid"] for n in batch], vecs, hashes)
            done += len(batch)
            embedded += len(todo)
            progress("embed", done, total)
    return embedded


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
