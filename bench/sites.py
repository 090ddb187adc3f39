"""Anyone's docs site: dense, the default and the default without the graph's features, on
public doc sites indexed as their teams would (the repository folder, no flags), with the
offline semantic layer; dev and test splits apart.

    python -m bench.sites --sites-root DIR --work WORK [--build] [--json]
        [--sites redux,vitepress,rust-book,myst-parser,hugo-docs,starlight,sqlmodel,beefree,dify-zh]

DIR holds each site's repository at the commit `bench/sites/README.md` names (unpacked from
a `fetch` snapshot: `git --git-dir=… archive HEAD | tar -x -C DIR/<site>`); WORK gets one
index per site (`dgrag index DIR/<site>` then `dgrag enrich --step all`, skipped where the
file exists) and, per site, the compact file's size against the site's Markdown.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from dgrag.config import Settings
from dgrag.evaluation.recall import evaluate

ROOT = Path(__file__).resolve().parent.parent
SITES = ("redux", "vitepress", "rust-book", "myst-parser", "hugo-docs", "starlight", "sqlmodel", "beefree", "dify-zh")
KS = [1, 2, 5]
CONFIGS = {"dense": ("dense", {}), "default": ("diffusion", {}),
           "no graph": ("diffusion", {"graph_features": False})}


def _dgrag(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "dgrag", *args], check=True, stdout=sys.stderr)  # its report: not the table


def build(sites_root: Path, work: Path, site: str) -> Path:
    db = work / f"{site}.db"
    if not db.exists():
        _dgrag("index", str(sites_root / site), "--db", str(db), "--quiet")
        _dgrag("enrich", "--db", str(db), "--step", "all", "--quiet")
    compact = work / f"{site}.compact.db"
    if not compact.exists():
        _dgrag("snapshot", str(compact), "--db", str(db))
    return db


def markdown_bytes(db: Path, sites_root: Path, site: str) -> int:
    """The bytes of the site's own pages (the files they include not counted)."""
    con = sqlite3.connect(db)
    paths = [r[0] for r in con.execute("SELECT DISTINCT source_path FROM nodes WHERE type='file'")]
    con.close()
    return sum(os.path.getsize(sites_root / site / p) for p in paths)


def measure(sites_root: Path, work: Path, site: str) -> dict:
    from dgrag.retrieve.retriever import Retriever

    db = work / f"{site}.db"
    settings = Settings(db_path=db)
    retriever = Retriever(settings)
    out = {"markdown_bytes": markdown_bytes(db, sites_root, site), "compact_bytes": (work / f"{site}.compact.db").stat().st_size}
    questions = ROOT / "bench" / "sites" / site / "questions.jsonl"
    for split in ("dev", "test"):
        for name, (method, cfg) in CONFIGS.items():
            rep = evaluate(settings, questions, [method], KS, overrides=cfg, retriever=retriever, split=split)
            m = rep["methods"][method]
            out[f"{split}/{name}"] = {"n": rep["n"], "recall": m["recall"], "section": m.get("section_recall", {}),
                                      "both": m.get("cross_page_both", {}), "n_cross": m.get("n_cross_page", 0)}
    return out


def table(results: dict) -> str:
    rows = ["| site | split | n | R@1 | R@2 | R@5 | S@1 | S@5 | both@5 |", "|---|---|---|---|---|---|---|---|---|"]
    pct = lambda d, k: f"{100 * d.get(k, 0):.1f}"  # noqa: E731
    for site, r in results.items():
        for split in ("dev", "test"):
            cells = {c: r[f"{split}/{c}"] for c in CONFIGS}
            d = cells["dense"]
            fmt = lambda key, k: " / ".join(pct(cells[c][key], k) for c in CONFIGS)  # noqa: E731
            rows.append(f"| {site} | {split} | {d['n']} ({d['n_cross']} cross) | {fmt('recall', '1')} | "
                        f"{fmt('recall', '2')} | {fmt('recall', '5')} | {fmt('section', '1')} | "
                        f"{fmt('section', '5')} | {fmt('both', '5')} |")
    return "\n".join(rows) + "\n\ncells: dense / default / no graph (graph_features false)"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sites-root", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--sites", default=",".join(SITES))
    ap.add_argument("--build", action="store_true", help="index and enrich the sites whose file is missing")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results = {}
    for site in args.sites.split(","):
        if args.build:
            build(args.sites_root, args.work, site)
        results[site] = measure(args.sites_root, args.work, site)
        r = results[site]
        print(f"{site}: compact file {r['compact_bytes'] / 1e6:.1f} MB for {r['markdown_bytes'] / 1e6:.2f} MB of "
              f"Markdown ({r['compact_bytes'] / r['markdown_bytes']:.1f}x)", file=sys.stderr)
    print(json.dumps(results, indent=1) if args.json else table(results))


if __name__ == "__main__":
    main()
