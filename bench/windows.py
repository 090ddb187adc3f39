"""Vectors for a section's later text, measured before the library computes them.

    python -m bench.windows --features F --work WORK --out G [--windows 4]
    python -m bench.windows --features G --score [--weights 1,10,20] [--split dev]

A section's vector stands for its first `embedding_max_chars` characters (the breadcrumb and
the start of its prose, `embed.embed_text`); past that, only the lexical index reads it (60 % of
Redux's sections and 87 % of the Rust book's are longer). The first form embeds, for each
section a `bench.ranker` dump ranks, up to `--windows` windows of its prose (the first is the
text the index embeds, each later one the breadcrumb and the next stretch), with the index's
own embedder, and keeps per candidate the best window's cosine minus the best candidate's (as
the `dense` feature is the first window's). The second form ranks with that column weighted
beside the default's weights, and prints the dump's configurations on one split.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import numpy as np

from dgrag.config import Settings

from . import ranker

KEYS = ranker.GAINS


def windows_of(crumb: str, prose: str, cut: int, k: int) -> list[str]:
    """The first text embedded for the section, then its prose's next stretches under its breadcrumb."""
    out = [f"{crumb}\n{prose}"[:cut]]
    room = max(64, cut - len(crumb) - 1)
    start = max(0, cut - len(crumb) - 1)  # a breadcrumb past the cut: the first window held no prose
    while len(out) < k and start < len(prose):
        out.append(f"{crumb}\n{prose[start:start + room]}")
        start += room
    return out


def add_windows(rows: list[dict], db: Path, k: int) -> None:
    from dgrag.backends.embedder_choice import make_embedder, resolve_embedder

    con = sqlite3.connect(db)
    meta = dict(con.execute("SELECT key, value FROM meta"))
    settings = resolve_embedder(Settings(db_path=db), meta, str(db))
    cut = settings.embedding_max_chars
    texts: dict[tuple[str, str], list[str]] = {}
    for path, crumb, prose in con.execute("SELECT source_path, breadcrumb, coalesce(prose, text, '') FROM nodes "
                                          "WHERE type = 'chunk'"):
        texts.setdefault((path, crumb), []).extend(windows_of(crumb or "", prose or "", cut, k))
    con.close()
    wanted = sorted({w for r in rows for it in r["items"] for w in texts.get((it["source_path"], it["breadcrumb"]), [])},
                    key=len)
    passages = make_embedder(settings, role="index")
    vec = dict(zip(wanted, passages.embed_passages(wanted))) if wanted else {}
    queries = make_embedder(settings, role="query").embed_queries([r["q"]["question"] for r in rows])
    for r, q in zip(rows, queries):
        best = np.array([max((float(vec[w] @ q) for w in texts.get((it["source_path"], it["breadcrumb"]), [])),
                             default=0.0) for it in r["items"]])
        r["window"] = (best - best.max()).tolist() if best.size else []


def score(data: dict, weights: list[float], split: str) -> str:
    """Per configuration: the default, then the default with the window column at each weight."""
    lines = ["| configuration | window weight | " + " | ".join(KEYS) + " |", "|---|---|" + "---|" * len(KEYS)]
    base = ranker.weights()
    for conf, rows in data["configs"].items():
        for ww in [0.0, *weights]:
            ranked = []
            for r in rows:
                M = ranker.matrix(r).copy()
                # the window column in the place of `dense` (0 in the default), so `order` ranks it as one
                M[:, ranker.NAMES.index("dense")] = np.asarray(r.get("window") or np.zeros(len(M)))
                ranked.append({**r, "_M": M})
            w = base.copy()
            w[ranker.NAMES.index("dense")] = ww
            s = ranker.summary(ranked, w, split)
            lines.append(f"| {conf} | {ww:g} | " + " | ".join(f"{s[k]:.1f}" if k in s else "" for k in KEYS) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", type=Path, required=True, help="a bench.ranker dump")
    ap.add_argument("--work", type=Path, help="the folder of the dump's indexes (<configuration>.db)")
    ap.add_argument("--out", type=Path, help="the dump with the window column written in")
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--score", action="store_true")
    ap.add_argument("--weights", default="1,10,20")
    ap.add_argument("--split", default="dev")
    args = ap.parse_args(argv)
    data = json.loads(args.features.read_text(encoding="utf-8"))
    if args.score:
        print(score(data, [float(x) for x in args.weights.split(",")], args.split))
        return
    if not (args.work and args.out):
        ap.error("--work and --out are needed to embed the windows")
    for conf, rows in data["configs"].items():
        add_windows(rows, args.work / f"{conf}.db", args.windows)
        print(f"{conf}: {len(rows)} questions", flush=True)
    args.out.write_text(json.dumps(data), encoding="utf-8")


if __name__ == "__main__":
    main()
