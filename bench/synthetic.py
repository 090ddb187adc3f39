"""A synthetic index in the real file format, at the seed's scale or a small one.

Node counts follow the seed's OpenHarmony index (7,348 files, 69,147 chunks, 27,059 code,
18,200 tables, ~430k entities); edges are contains trees, jump links, passage, semantic and
synonymy edges with the seed's proportions, each joining a distinct pair of nodes; vectors
are random unit vectors.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dgrag.store import Store

PRESETS = {
    # name: files, chunks, code, tables, images, entities, edges target, vectors per big type
    "small": dict(file=300, chunk=3000, code=1200, table=800, image=100, entity=14600, edges=120_000,
                  facts=20_000, knn=20_000),
    "seed": dict(file=7348, chunk=69147, code=27059, table=18200, image=2000, entity=376_246, edges=3_000_000,
                 facts=100_000, knn=100_000),
}
DIM = 384


@dataclass
class Synthetic:
    path: Path
    n_nodes: int
    n_edges: int
    build_s: float


def _unit(rng, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def build(path: Path, preset: str, seed: int = 0) -> Synthetic:
    cfg, rng = PRESETS[preset], np.random.default_rng(seed)
    t0 = time.perf_counter()
    path.unlink(missing_ok=True)
    kinds = ["file", "chunk", "code", "table", "image", "entity"]
    start, ranges = 1, {}
    for k in kinds:
        ranges[k] = np.arange(start, start + cfg[k])
        start += cfg[k]
    with Store(path) as st:
        st.bind_embedder("synthetic-random-384", DIM)
        with st.transaction():
            for k in kinds:
                st.nodes.insert_bulk((int(r), f"{k}-{r:012x}", k, f"{k} {r}", f"{k} {r}", f"doc/{r % cfg['file']}.md",
                                      "synthetic") for r in ranges[k])
            edges = _distinct(rng, _edges(rng, ranges, cfg), ranges["entity"], cfg["edges"])
            st.edges.add(edges)
            facts = _facts(rng, ranges, cfg)
            st.con.executemany("INSERT INTO facts(rowid, head, relation, tail, text, chunk, source, embedded) "
                               "VALUES (?,?,?,?,?,?,'synthetic',1)", facts)
        with st.transaction():
            for k in ("file", "chunk", "code", "table", "image"):
                ids = ranges[k][: cfg["knn"]]
                st.vectors.put_bulk(k, ids, _unit(rng, ids.size))
            ents = ranges["entity"][: cfg["knn"]]
            st.vectors.put_bulk("entity", ents, _unit(rng, ents.size))
            st.vectors.put_bulk("fact", [f[0] for f in facts], _unit(rng, len(facts)))
        n_edges = st.con.execute("SELECT count(*) FROM edges").fetchone()[0]
    return Synthetic(path, start - 1, n_edges, time.perf_counter() - t0)


def _edges(rng, r: dict, cfg: dict) -> list[tuple[int, int, str, float]]:
    out = []
    chunk_file = rng.choice(r["file"], r["chunk"].size)
    out += [(int(f), int(c), "contains", 1.0) for f, c in zip(chunk_file, r["chunk"])]
    for k in ("code", "table", "image"):
        out += [(int(c), int(x), "contains", 1.0) for c, x in zip(rng.choice(r["chunk"], r[k].size), r[k])]
    n_jump = int(r["chunk"].size * 0.7)
    out += [(int(a), int(b), "jump", 1.0) for a, b in zip(rng.choice(r["chunk"], n_jump), rng.choice(r["file"], n_jump))]
    left = cfg["edges"] - len(out)
    n_pass, n_sem = int(left * 0.42), int(left * 0.42)
    n_syn = left - n_pass - n_sem
    ents = r["entity"]
    zipf = np.minimum(rng.zipf(1.6, n_pass + 2 * n_sem) - 1, ents.size - 1)  # popular entities, long tail
    out += [(int(c), int(ents[z]), "passage", 1.0) for c, z in zip(rng.choice(r["chunk"], n_pass), zipf[:n_pass])]
    a, b = ents[zipf[n_pass:n_pass + n_sem]], rng.choice(ents, n_sem)
    w = rng.integers(1, 6, n_sem).astype(float)
    out += [(int(x), int(y), "semantic", float(ww)) for x, y, ww in zip(a, b, w) if x != y]
    a, b = rng.choice(ents, n_syn), rng.choice(ents, n_syn)
    out += [(int(x), int(y), "synonymy", float(s)) for x, y, s in zip(a, b, rng.uniform(0.95, 1.0, n_syn)) if x != y]
    return out


def _distinct(rng, edges: list[tuple], ents: np.ndarray, target: int) -> list[tuple]:
    """Keep one edge per node pair (the graph merges the others), then top up with random
    entity-entity semantic edges until `target` distinct pairs: the seed's 3M are distinct."""
    a = np.array([e[0] for e in edges], np.int64)
    b = np.array([e[1] for e in edges], np.int64)
    key = np.minimum(a, b) << 32 | np.maximum(a, b)
    _, first = np.unique(key, return_index=True)
    out = [edges[i] for i in np.sort(first)]
    seen = set(key[first].tolist())
    while len(out) < target:
        n = target - len(out)
        x, y = rng.choice(ents, n), rng.choice(ents, n)
        for u, v, w in zip(x.tolist(), y.tolist(), rng.integers(1, 6, n).tolist()):
            k = min(u, v) << 32 | max(u, v)
            if u != v and k not in seen:
                seen.add(k)
                out.append((u, v, "semantic", float(w)))
    return out


def _facts(rng, r: dict, cfg: dict) -> list[tuple]:
    n = cfg["facts"]
    h, t = rng.choice(r["entity"], n), rng.choice(r["entity"], n)
    c = rng.choice(r["chunk"], n)
    return [(i + 1, int(a), "rel", int(b), f"(e{a}, rel, e{b})", int(cc)) for i, (a, b, cc) in enumerate(zip(h, t, c))]
