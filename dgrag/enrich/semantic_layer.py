"""After OpenIE: edges, reference counts, entity and fact vectors, synonymy edges."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..config import Settings
from ..embed import Progress, embed_pending, text_hash
from ..kernels.knn import knn_pairs, random_pair_similarity
from ..store import Store


def finalize(store: Store, settings: Settings, embedder, progress: Progress | None = None) -> dict:
    """Bring edges and vectors in line with the facts; returns counts of what it did."""
    with store.transaction():
        removed = store.nodes.gc_entities()
        edges = store.semantic.rebuild_edges()
    out = {"entities_removed": removed, "edges": edges}
    if embedder is not None:
        store.bind_embedder(embedder.model_id, embedder.dim)
        out["embedded_nodes"] = embed_pending(store, embedder, settings, progress)
        out["embedded_facts"] = embed_facts(store, embedder, settings, progress)
        out["synonymy_edges_added"] = add_synonymy_edges(store, settings, embedder)
    return out


def embed_facts(store: Store, embedder, settings: Settings, progress: Progress | None = None) -> int:
    """Vectors for the facts that have none, in committed batches. A fact text embedded before
    (the same triple from another chunk: a quarter of them on the ArkUI-X corpus) reuses its
    vector. Returns the number of texts the model embedded."""
    pending = store.semantic.pending_facts()
    bs, embedded = max(1, settings.embedding_batch_size), 0
    done = store.semantic.embedded_fact_texts(t for _, t in pending)  # text -> a fact holding its vector
    for i in range(0, len(pending), bs):
        batch = pending[i:i + bs]
        known_rows = {t: done[t] for _, t in batch if t in done}
        by_row = store.vectors.of_rowids("fact", list(set(known_rows.values())))
        known = {t: by_row[r] for t, r in known_rows.items() if r in by_row}
        todo = sorted({t for _, t in batch if t not in known}, key=len)  # less padding
        fresh = dict(zip(todo, embedder.embed_passages([t[:settings.embedding_max_chars] for t in todo])))
        vecs = np.stack([fresh[t] if t in fresh else known[t] for _, t in batch])
        with store.transaction():
            store.vectors.put("fact", [r for r, _ in batch], vecs,
                              [text_hash(t[:settings.embedding_max_chars]) for _, t in batch])
            store.semantic.mark_facts_embedded([r for r, _ in batch])
        for r, t in batch:
            done.setdefault(t, r)
        embedded += len(todo)
        if progress:
            progress("embed facts", i + len(batch), len(pending))
    return embedded


PROBE_TERMS = Path(__file__).with_name("probe_terms.txt")


def synonymy_threshold(store: Store, settings: Settings, embedder) -> float:
    """The configured threshold, raised above this embedder's background similarity.

    Under multilingual-e5, unrelated names average ~0.8 cosine: a fixed 0.8 or even 0.9
    would link unrelated entities. The floor is the 99th percentile of cosines between
    unrelated probe terms (a fixed list), so it depends on the embedder only: an incremental
    run and a full rebuild draw the same edges. Recorded in the index's meta.
    """
    key = f"synonymy_threshold:{embedder.model_id}"
    cached = store.meta.get(key)
    if cached is not None:
        return float(cached)
    terms = PROBE_TERMS.read_text(encoding="utf-8").split()
    vecs = embedder.embed_passages(terms)
    background = random_pair_similarity(vecs, n_pairs=4000)
    floor = float(np.quantile(background, 0.99)) if background.size else 0.0
    effective = max(settings.synonymy_edge_sim_threshold, min(floor, 0.995))
    with store.transaction():
        store.meta.set("synonymy_background_mean", f"{float(background.mean()) if background.size else 0:.4f}")
        store.meta.set(key, f"{effective:.4f}")
    return effective


def add_synonymy_edges(store: Store, settings: Settings, embedder) -> int:
    """KNN synonymy edges for entities that have none computed yet (incremental). An entity's
    vector embeds its name alone (`embed_text`): what synonymy is about, as in HippoRAG."""
    new = store.semantic.entities_without_synonymy()
    if not new:
        return 0
    ids, mat = store.vectors.matrix("entity")
    if ids.size < 2:
        with store.transaction():
            store.semantic.mark_synonymy_done(new)
        return 0
    threshold = synonymy_threshold(store, settings, embedder)
    pos = {int(r): i for i, r in enumerate(ids)}
    q_idx = np.array([pos[r] for r in new if r in pos], dtype=np.int64)
    pairs = knn_pairs(mat[q_idx], mat, settings.synonymy_edge_topk, threshold, ids[q_idx], ids)
    edges = {(min(a, b), max(a, b)): s for a, b, s in pairs}
    with store.transaction():
        store.edges.add((a, b, "synonymy", float(s)) for (a, b), s in edges.items())
        store.semantic.mark_synonymy_done(new)
    return len(edges)
