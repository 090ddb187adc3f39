"""A learned ranker against the linear one: LightGBM's lambdarank, cross-validated by corpus.

    pip install lightgbm   # not a dependency of dgrag: this comparison alone needs it
    python -m bench.lambdarank --features F [--features F2 ...]

Over the same dumps as `bench.ranker` (its `dump`: every candidate's features and extras, per
question), one corpus is left out at a time (`bench.ranker.GROUP`): a lambdarank model is trained
on the other corpora's dev questions (a candidate's grade: 2 on a gold section, 1 on a gold
page or passage, else 0) and ranks the held-out corpus's test questions by its score alone.
Printed beside dense and the default (the linear weights, as the library ranks) on the same
questions. The model's settings are small on purpose (7 leaves, 20 candidates a leaf at least,
300 rounds at 0.05): a few hundred dev questions a fold.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from dgrag.evaluation.recall import gold_of, recall_at, section_recall_at

from . import ranker

KEYS = ranker.GAINS
MODEL = dict(objective="lambdarank", n_estimators=300, learning_rate=0.05, num_leaves=7, min_child_samples=20,
             subsample=0.8, subsample_freq=1, colsample_bytree=0.8, lambdarank_truncation_level=10,
             random_state=0, verbose=-1)


def grades(row: dict) -> np.ndarray:
    q = row["q"]
    key, gold = gold_of(q)
    return np.array([2 if (section_recall_at([it], q, 1) or 0) > 0 else int(recall_at([it], key, gold, 1) > 0)
                     for it in row["items"]])


def _mean(ms: list[dict[str, float]]) -> dict[str, float]:
    keys = {k for m in ms for k in m}
    return {k: 100 * float(np.mean([m[k] for m in ms if k in m])) for k in keys}


def held_out(data: dict, held: str) -> dict[str, dict[str, float]]:
    """Per configuration of corpus `held`: the model's test figures, trained without `held`."""
    import lightgbm as lgb

    X, y, sizes = [], [], []
    for c, rows in data["configs"].items():
        if ranker.GROUP[c] == held:
            continue
        for r in rows:
            if r["q"].get("split") == "dev":
                X.append(ranker.matrix(r))
                y.append(grades(r))
                sizes.append(len(X[-1]))
    model = lgb.LGBMRanker(**MODEL).fit(np.vstack(X), np.concatenate(y), group=sizes)
    out = {}
    for c, rows in data["configs"].items():
        if ranker.GROUP[c] == held:
            test = [r for r in rows if r["q"].get("split") == "test"]
            out[c] = _mean([ranker.metrics_of(r, np.argsort(-model.predict(ranker.matrix(r)), kind="stable").tolist())
                            for r in test])
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", type=Path, required=True, action="append")
    args = ap.parse_args(argv)
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        ap.error("this comparison needs LightGBM: pip install lightgbm")
    data = ranker.load(args.features)
    print("| held-out configuration (test) | ranking | " + " | ".join(KEYS) + " |")
    print("|---|---|" + "---|" * len(KEYS))
    for held in sorted({ranker.GROUP[c] for c in data["configs"]}):
        for c, learned in held_out(data, held).items():
            rows = data["configs"][c]
            for label, s in (("dense", ranker.summary(rows, ranker.DENSE, "test")),
                             ("default", ranker.summary(rows, ranker.weights(), "test")), ("lambdarank", learned)):
                print(f"| {c} | {label} | " + " | ".join(f"{s[k]:.1f}" if k in s else "" for k in KEYS) + " |")


if __name__ == "__main__":
    main()
