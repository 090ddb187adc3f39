"""Re-run the offline OpenIE of an enriched index on a copy, then its semantic layer.

    python -m bench.openie_reenrich SRC.db DST.db

For measuring a change to the offline extraction without a full rebuild: the copy keeps its
chunks and their vectors; every chunk is extracted again (as `enrich --step openie` does on a
fresh index, document-frequency stop-entities included), a fact whose text the source already
embedded reuses that vector, and `finalize` embeds only what is new (entity vectors are reused
by text already). The source is never written.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from dgrag.backends.embedder_choice import embedder_for_store
from dgrag.config import Settings
from dgrag.embed import embed_text, text_hash
from dgrag.enrich import semantic_layer
from dgrag.enrich.runner import run_step
from dgrag.store import Store
from dgrag.store.vectors import decode


def settings_dim(store: Store) -> int:
    return int(store.meta.get("embedding_dim"))


def _fact_vectors(db: Path) -> dict[str, bytes]:
    with Store(db) as other:
        return dict(other.con.execute("SELECT f.text, v.embedding FROM facts f JOIN vec_fact v ON v.rowid = f.rowid"))


def _entity_vectors(db: Path) -> dict[str, bytes]:
    with Store(db) as other:
        return dict(other.con.execute(
            "SELECT n.embed_hash, v.embedding FROM nodes n JOIN vec_entity v ON v.rowid = n.rowid "
            "WHERE n.type = 'entity' AND n.embed_hash IS NOT NULL"))


def _reuse_entity_vectors(store: Store, settings: Settings, reuse: list[Path]) -> int:
    """Entity vectors of other copies for this copy's entities without one (same text, same model)."""
    known: dict[str, bytes] = {}
    for other in reuse:
        known.update(_entity_vectors(other))
    todo = []
    for rowid, kind, node in store.nodes.pending_embedding():
        if kind == "entity":
            h = text_hash(embed_text(node, settings.embedding_max_chars))
            if h in known:
                todo.append((rowid, h))
    if todo:
        with store.transaction():
            vecs = np.stack([decode(known[h], settings_dim(store)) for _, h in todo])
            store.vectors.put("entity", [r for r, _ in todo], vecs, [h for _, h in todo])
    return len(todo)


def reenrich(src: Path, dst: Path, settings: Settings | None = None, reuse: list[Path] = ()) -> dict:
    if dst.exists():
        raise SystemExit(f"{dst} exists")
    subprocess.run([sys.executable, "-m", "dgrag", "snapshot", str(dst), "--db", str(src)], check=True)
    settings = settings or Settings.from_env(db_path=dst)
    out: dict = {}
    with Store(dst) as store:
        embedder = embedder_for_store(settings, store)
        old = dict(store.con.execute("SELECT f.text, v.embedding FROM facts f JOIN vec_fact v ON v.rowid = f.rowid"))
        for other in reuse:       # other copies built with the same embedder (earlier variants)
            old.update(_fact_vectors(other))
        with store.transaction():
            store.con.execute("DELETE FROM enrich_log WHERE step='openie'")   # every chunk again
        t0 = time.perf_counter()
        rep = run_step(store, settings, "openie", None)
        out["openie"] = {"chunks": rep.offline, "seconds": round(time.perf_counter() - t0, 1)}
        pending = store.semantic.pending_facts()
        same = [(r, old[t]) for r, t in pending if t in old]
        with store.transaction():
            if same:
                vecs = np.stack([decode(b, settings_dim(store)) for _, b in same])
                store.vectors.put("fact", [r for r, _ in same], vecs, [""] * len(same))
                store.semantic.mark_facts_embedded([r for r, _ in same])
        out["facts"] = {"total": len(store.con.execute("SELECT rowid FROM facts").fetchall()),
                        "new": len(pending), "vector_reused": len(same)}
        out["entity_vectors_reused"] = _reuse_entity_vectors(store, settings, list(reuse))
        t0 = time.perf_counter()
        out["semantic_layer"] = semantic_layer.finalize(store, settings, embedder)
        out["semantic_layer"]["seconds"] = round(time.perf_counter() - t0, 1)
        out["stats"] = store.stats()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--reuse", type=Path, action="append", default=[],
                    help="another index with the same embedder whose fact vectors may be reused")
    ap.add_argument("--skip-code-tables", action="store_true",
                    help="leave code and table nodes without vectors, as the eval-only ArkUI-X index has them")
    a = ap.parse_args(argv)
    if a.skip_code_tables:
        from dgrag.store import nodes

        orig = nodes.pending_embedding
        nodes.pending_embedding = lambda con, limit=1_000_000: [
            p for p in orig(con, limit) if p[1] not in ("code", "table")]
    print(json.dumps(reenrich(a.src, a.dst, reuse=a.reuse), indent=1, default=str))


if __name__ == "__main__":
    main()
